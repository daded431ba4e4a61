package agentsdk

import (
	"fmt"
	"net"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// failover returns the target and resolver of a connection to target and
// peers, all nodes of one cluster: gRPC's pick_first connects to the
// first that answers and, when it stops answering, to the next. Each
// address keeps its own host name for TLS.
func failover(target string, peers []string) (string, grpc.DialOption, error) {
	var addrs []resolver.Address
	for _, a := range append([]string{target}, peers...) {
		if slices.ContainsFunc(addrs, func(x resolver.Address) bool { return x.Addr == a }) {
			continue
		}
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return "", nil, fmt.Errorf("with Options.Peers, the target and every peer are host:port addresses: %q: %w", a, err)
		}
		addrs = append(addrs, resolver.Address{Addr: a, ServerName: host})
	}
	r := manual.NewBuilderWithScheme("hubd-nodes") // the connection's own (grpc.WithResolvers)
	r.InitialState(resolver.State{Addresses: addrs})
	return r.Scheme() + ":///" + target, grpc.WithResolvers(r), nil
}
