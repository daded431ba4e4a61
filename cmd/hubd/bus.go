package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/hubd/hubd/internal/cluster/bus"
	"github.com/hubd/hubd/internal/exitcode"
)

// busFlags are the flags that secure the cluster bus (NATS): the nodes'
// credentials and TLS. docs/OPERATIONS.md, "The cluster bus", is the
// operator's account.
type busFlags struct {
	creds, tlsCert, tlsKey, tlsCA string
	insecure                      bool
}

func (b *busFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.creds, "nats-creds", "", "the nodes' credentials `file` on the cluster bus (a NATS user nkey seed, the same file on every node: hubd cluster creds makes one); required unless every NATS address is loopback and the hub runs in development mode")
	fs.StringVar(&b.tlsCert, "nats-tls-cert", "", "this node's certificate (PEM `file`) for the embedded NATS server's clients and routes, good for server and client authentication")
	fs.StringVar(&b.tlsKey, "nats-tls-key", "", "the key of --nats-tls-cert (PEM `file`)")
	fs.StringVar(&b.tlsCA, "nats-tls-ca", "", "the CA (PEM `file`) that signed every node's --nats-tls-cert, or an external NATS cluster's certificates; required with TLS")
	fs.BoolVar(&b.insecure, "insecure-nats", false, "allow a cluster bus without --nats-creds (off loopback, or with --tokens or --client-ca) or without TLS off loopback: whoever reaches the NATS ports or a node service can then act as any agent and rewrite the log, and reads it in cleartext (a trusted network only)")
}

// addrs are the cluster bus's addresses: the embedded server's client and
// route listeners and its peers' routes, or the external servers' URLs.
func (f *clusterFlags) addrs() [][2]string {
	var out [][2]string
	if f.embed {
		out = append(out, [2]string{"--nats-listen", f.natsListen})
		if f.natsRoutes != "" {
			out = append(out, [2]string{"--nats-route-listen", f.natsRouteListen})
			for _, r := range splitList(f.natsRoutes) {
				out = append(out, [2]string{"--nats-routes", r})
			}
		}
	}
	for _, u := range splitList(f.natsURLs) {
		out = append(out, [2]string{"--cluster", u})
	}
	return out
}

// nodeService is the node service's address (--node-listen, by default
// the host of --listen).
func (f *clusterFlags) nodeService() string {
	if f.nodeListen != "" {
		return f.nodeListen
	}
	host, _, err := net.SplitHostPort(f.listen)
	if err != nil {
		return f.listen
	}
	return net.JoinHostPort(host, "0")
}

// hostPort returns the host:port of a bus address: a URL's, or the
// address itself.
func hostPort(addr string) string {
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		return u.Host
	}
	return addr
}

// tlsOn reports whether the bus is encrypted: an embedded server's
// certificate, key and CA given; external servers' URLs all tls:// or a
// CA given.
func (f *clusterFlags) tlsOn() bool {
	b := f.bus
	if f.embed {
		return b.tlsCert != "" && b.tlsKey != "" && b.tlsCA != ""
	}
	if b.tlsCA != "" {
		return true
	}
	for _, u := range splitList(f.natsURLs) {
		if !strings.HasPrefix(u, "tls://") {
			return false
		}
	}
	return true
}

// checkBus refuses a cluster bus anyone could use to act as any agent:
// with no credentials off loopback, or when the hub authenticates its
// clients (authed: --tokens or --client-ca, which a bus anyone local may
// use would bypass); and off loopback without TLS. --insecure-nats lifts
// both. Incomplete TLS flags are refused whatever the address.
func (f *clusterFlags) checkBus(authed bool) error {
	b := f.bus
	set := b.creds != "" || b.tlsCert != "" || b.tlsKey != "" || b.tlsCA != "" || b.insecure
	switch {
	case !f.on() && set:
		return exitcode.Usage("serve: --nats-creds, --nats-tls-* and --insecure-nats need --cluster or --embed-nats")
	case (b.tlsCert == "") != (b.tlsKey == ""):
		return exitcode.Usage("serve: --nats-tls-cert and --nats-tls-key go together (the certificate and its key)")
	case b.tlsCert != "" && b.tlsCA == "":
		return exitcode.Usage("serve: --nats-tls-cert needs --nats-tls-ca (the CA that signed every node's certificate, against which routes are verified)")
	case f.embed && b.tlsCA != "" && b.tlsCert == "" && f.natsURLs == "":
		return exitcode.Usage("serve: --embed-nats with --nats-tls-ca needs --nats-tls-cert and --nats-tls-key (the certificate the server presents)")
	}
	if !f.on() || b.insecure {
		return nil
	}
	var off string
	for _, a := range f.addrs() {
		if !loopbackAddr(hostPort(a[1])) {
			off = a[0] + " " + a[1]
			break
		}
	}
	// Without credentials the node service asks for no certificate; with
	// them it is mutual TLS whatever the bus's TLS.
	var nodeOff string
	if node := f.nodeService(); !loopbackAddr(node) {
		nodeOff = node
	}
	switch {
	case b.creds == "" && off != "":
		return exitcode.Usage("serve: the cluster bus on %s would accept clients with no credentials, who could act as any agent or as operator and rewrite the log: give --nats-creds (the nodes' shared credentials: hubd cluster creds FILE) with --nats-tls-cert, --nats-tls-key and --nats-tls-ca, or accept the risk with --insecure-nats", off)
	case b.creds == "" && nodeOff != "":
		return exitcode.Usage("serve: the node service on %s (--node-listen, by default the host of --listen) would take calls from anyone as any agent or as operator: give --nats-creds (hubd cluster creds FILE: the nodes' CA of its mutual TLS is derived from it), or accept the risk with --insecure-nats", nodeOff)
	case b.creds == "" && authed:
		return exitcode.Usage("serve: --tokens or --client-ca protect the gRPC address, but the cluster bus (%s) would let any local process act as any agent: give --nats-creds (hubd cluster creds FILE), or accept the risk with --insecure-nats", f.addrs()[0][1])
	case off != "" && !f.tlsOn():
		return exitcode.Usage("serve: the cluster bus on %s would carry calls and records in cleartext: give --nats-tls-cert, --nats-tls-key and --nats-tls-ca (with --cluster: tls:// URLs or --nats-tls-ca), or accept the risk with --insecure-nats", off)
	}
	return nil
}

// load reads the credentials and TLS files; nil for those not given.
func (b *busFlags) load() (*bus.Creds, *bus.TLS, error) {
	var creds *bus.Creds
	var tls *bus.TLS
	var err error
	if b.creds != "" {
		if creds, err = bus.LoadCreds(b.creds); err != nil {
			return nil, nil, exitcode.Usage("%v", err)
		}
	}
	if b.tlsCA != "" {
		if tls, err = bus.LoadTLS(b.tlsCert, b.tlsKey, b.tlsCA); err != nil {
			return nil, nil, exitcode.Usage("%v", err)
		}
	}
	return creds, tls, nil
}

// warn logs, at start, what the bus gives up.
func (f *clusterFlags) warn(lg zerolog.Logger) {
	if !f.on() {
		return
	}
	switch {
	case f.bus.creds == "" && f.bus.insecure:
		lg.Warn().Msg("--insecure-nats: the cluster bus asks for no credentials: whoever reaches a NATS port can act as any agent or as operator and rewrite the log")
	case f.bus.creds == "":
		lg.Warn().Msg("the cluster bus asks for no credentials (loopback, development mode): any local process can act as any agent")
	case !f.tlsOn():
		for _, a := range f.addrs() {
			if !loopbackAddr(hostPort(a[1])) {
				lg.Warn().Str("address", a[1]).Msg("--insecure-nats: the cluster bus is not encrypted off loopback: calls and records cross the network in cleartext")
				return
			}
		}
	}
}

// busOptions are the NATS client options of a command that reads the
// cluster (hubd cluster status): the nodes' credentials and the CA.
func busOptions(creds, ca string) ([]nats.Option, error) {
	b := busFlags{creds: creds, tlsCA: ca}
	c, t, err := b.load()
	if err != nil {
		return nil, err
	}
	var opts []nats.Option
	if c != nil {
		opts = append(opts, c.Option())
	}
	if t != nil {
		opts = append(opts, nats.Secure(t.ClientConfig()))
	}
	return opts, nil
}

// runCreds runs `hubd cluster creds FILE`: new credentials for the nodes
// of a cluster, written to FILE (which must not exist) with mode 0600, and
// the account a NATS cluster of your own gives them.
func runCreds(args []string, stdout io.Writer) error {
	fs := newCommand("cluster creds", "FILE", "Write new credentials for the nodes of a cluster to FILE (mode 0600; it must not exist): give every node the same file with --nats-creds. Prints its public key and the account a NATS cluster of your own gives the nodes.", stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return exitcode.Usage("cluster creds: want one FILE")
	}
	b, creds, err := bus.NewCreds()
	if err != nil {
		return err
	}
	path := fs.Arg(0)
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return exitcode.Usage("cluster creds: %s exists: credentials are never overwritten (every node holds the same file)", path)
	}
	if err != nil {
		return err
	}
	if _, err := file.Write(b); err != nil {
		file.Close()
		return err
	}
	if err := file.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (public key %s)\n\nFor a NATS cluster of your own (--cluster), give hubd this account in every server's\n`accounts { ... }` block (with `jetstream { sync_interval: always }`):\n\n%s",
		path, creds.PublicKey(), bus.NATSAccount("HUBD", creds.PublicKey()))
	return nil
}
