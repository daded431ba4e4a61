package hubhttp

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// inproc is a grpc.ClientConnInterface that calls a service of this
// process: Invoke finds the method in the service's descriptor and runs its
// generated handler with the interceptor chain, as the gRPC server would,
// with no network and no encoding. The caller's outgoing metadata (what the
// gateway made of the HTTP headers) becomes the call's incoming metadata.
// Streams are not supported: the JSON API maps no streaming method.
type inproc struct {
	srv     any
	methods map[string]grpc.MethodDesc // by full method name
	chain   grpc.UnaryServerInterceptor
}

// newInproc returns a connection to srv, which implements desc, running
// every call through chain.
func newInproc(desc *grpc.ServiceDesc, srv any, chain grpc.UnaryServerInterceptor) *inproc {
	c := &inproc{srv: srv, methods: map[string]grpc.MethodDesc{}, chain: chain}
	for _, m := range desc.Methods {
		c.methods["/"+desc.ServiceName+"/"+m.MethodName] = m
	}
	return c
}

// Invoke implements grpc.ClientConnInterface. The request is copied into
// the handler's own message and the answer into reply, so the service owns
// what it is given (the hub keeps envelopes) and the caller what it gets.
func (c *inproc) Invoke(ctx context.Context, method string, args, reply any, _ ...grpc.CallOption) error {
	m, ok := c.methods[method]
	if !ok {
		return status.Errorf(codes.Unimplemented, "method %s is not served in process", method)
	}
	in, ok := args.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "request of %s is a %T, not a message", method, args)
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	ctx = metadata.NewIncomingContext(ctx, md)
	dec := func(dst any) error {
		proto.Merge(dst.(proto.Message), in)
		return nil
	}
	out, err := m.Handler(c.srv, ctx, dec, c.chain)
	if err != nil {
		return err
	}
	msg, ok := out.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "answer of %s is a %T, not a message", method, out)
	}
	proto.Merge(reply.(proto.Message), msg)
	return nil
}

// NewStream implements grpc.ClientConnInterface: streams are served as
// server-sent events instead.
func (c *inproc) NewStream(_ context.Context, _ *grpc.StreamDesc, method string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Errorf(codes.Unimplemented, "stream %s is not served over the JSON API", method)
}

// chain composes unary interceptors, the first outermost, as
// grpc.ChainUnaryInterceptor does for a server.
func chain(ics ...grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return step(ics, 0, ctx, req, info, h)
	}
}

func step(ics []grpc.UnaryServerInterceptor, i int, ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if i == len(ics) {
		return h(ctx, req)
	}
	return ics[i](ctx, req, info, func(ctx context.Context, req any) (any, error) {
		return step(ics, i+1, ctx, req, info, h)
	})
}
