// Package sdkgo holds the tests of agentsdk, hubd's Go SDK, against a
// real hub in process (hub/hubtest): its calls, streams, Serve, the calls
// between agents, errors and graph builders, and runnable examples. The
// SDK itself is a module of its own (agentsdk/, which depends on hubpb
// and gRPC only), so its tests that need the server live here, in the
// server's module, beside the Python and TypeScript SDKs' tests.
package sdkgo
