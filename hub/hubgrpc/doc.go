// Package hubgrpc serves a hub over gRPC (the Hub service of package
// hubpb): it authenticates each call, binds the sender of every envelope to
// the authenticated agent, converts between the wire messages and hubd's
// types, and maps every error to a gRPC status with a stable reason in a
// google.rpc.ErrorInfo detail (domain "hubd") through the one table in
// errors.go.
//
// Authentication: a bearer token per agent ("authorization: Bearer <t>"
// metadata) from a tokens file, or a verified client certificate whose
// common name is the agent (mTLS). Without tokens (development mode only,
// on a loopback address) the caller names itself in the "x-hubd-agent"
// metadata. The health and reflection services need no authentication.
package hubgrpc
