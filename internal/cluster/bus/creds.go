package bus

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// ErrCreds reports a credentials file that cannot be used.
var ErrCreds = errors.New("bus: unusable credentials")

// Creds are the credentials of the nodes of one cluster on its NATS bus:
// one NATS user nkey that every node holds (the file `hubd serve
// --nats-creds` names, the same on every node). A node connects to NATS
// as that user (the server knows only its public key and signs a nonce
// challenge with it: the seed never crosses the wire); the embedded
// servers accept that user alone, with NodePermissions, and authenticate
// their routes with a password derived from the seed; and the nodes' CA,
// which signs the certificates of the calls between nodes, is derived
// from it too (Derive).
type Creds struct {
	kp   nkeys.KeyPair
	pub  string
	seed []byte
}

// ParseCreds reads credentials: a NATS user nkey seed ("SU…"), alone on
// a line, or decorated as NATS tools write it; '#' lines are comments.
func ParseCreds(b []byte) (*Creds, error) {
	kp, err := nkeys.ParseDecoratedUserNKey(b)
	if err != nil {
		return nil, fmt.Errorf("%w: want a NATS user nkey seed (SU…, as `hubd cluster creds` writes): %v", ErrCreds, err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCreds, err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCreds, err)
	}
	return &Creds{kp: kp, pub: pub, seed: seed}, nil
}

// LoadCreds reads the credentials file at path, refusing one that its
// group or others may read or write: whoever reads it can act as any
// node, and so as any agent.
func LoadCreds(path string) (*Creds, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCreds, err)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s is open to its group or others (mode %04o): whoever reads it can act as any agent; make it its owner's alone (chmod 600 %s)",
			ErrCreds, path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCreds, err)
	}
	c, err := ParseCreds(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// NewCreds returns the contents of a new credentials file: a fresh user
// nkey seed, with comments naming its public key.
func NewCreds() ([]byte, *Creds, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, nil, err
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, nil, err
	}
	c, err := ParseCreds(seed)
	if err != nil {
		return nil, nil, err
	}
	file := fmt.Sprintf("# hubd cluster bus credentials (--nats-creds): the NATS user every node connects as.\n"+
		"# The same file on every node; keep it secret (mode 0600).\n# Public key: %s\n%s\n", c.pub, seed)
	return []byte(file), c, nil
}

// PublicKey is the nkey's public key, what a NATS server's configuration
// names ("U…").
func (c *Creds) PublicKey() string { return c.pub }

// Option is the NATS client option that authenticates as the nodes'
// user.
func (c *Creds) Option() nats.Option { return nats.Nkey(c.pub, c.kp.Sign) }

// Derive returns a secret for one use, derived from the seed: HMAC-SHA256
// keyed by the seed over the use's label. Every node holding the same
// credentials derives the same secret; nobody else can.
func (c *Creds) Derive(label string) []byte {
	m := hmac.New(sha256.New, c.seed)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// routeAuth is the user and password with which the embedded servers
// authenticate each other's routes.
func (c *Creds) routeAuth() (user, pass string) {
	return "hubd-route", hex.EncodeToString(c.Derive("hubd nats route v1"))
}

// logSubjects is the subject prefix of the partition streams,
// wal/jetstream.DefaultSubjectPrefix (not imported: the log's own tests
// run their servers through this package).
const logSubjects = "hub"

// The KV buckets of the leases (internal/cluster): who serves each
// partition, and the live nodes.
const (
	LeaseBucket = "hub_owners"
	NodesBucket = "hub_nodes"
)

// nodeSubjects are what a node publishes to, and what it subscribes to:
// the partition streams' subjects, the JetStream API (streams, consumers,
// direct gets) with its acknowledgements and flow control, the two lease
// buckets, and the inboxes its requests are answered on. The nodes call
// each other over gRPC, not on the bus.
func nodeSubjects() (publish, subscribe []string) {
	return []string{logSubjects + ".>", "$JS.API.>", "$JS.ACK.>", "$JS.FC.>",
			"$KV." + LeaseBucket + ".>", "$KV." + NodesBucket + ".>", "_INBOX.>"},
		[]string{"_INBOX.>"}
}

// NodePermissions are the NATS permissions of the nodes' user: what a
// node publishes and subscribes to, nothing else. On an embedded server
// no other user exists; on a NATS cluster of your own, give hubd an
// account of its own (NATSAccount) so that no other user reaches these
// subjects at all.
func NodePermissions() *server.Permissions {
	pub, sub := nodeSubjects()
	return &server.Permissions{Publish: &server.SubjectPermission{Allow: pub}, Subscribe: &server.SubjectPermission{Allow: sub}}
}

// NATSAccount is the account entry, in nats-server's configuration
// syntax, that a NATS cluster of your own gives hubd: JetStream on, and
// the nodes' user (public key pub) alone in it with NodePermissions. It
// goes inside the server's `accounts { … }` block, beside the accounts of
// other users, who then reach none of hubd's subjects.
func NATSAccount(name, pub string) string {
	quote := func(subjects []string) string {
		q := make([]string, len(subjects))
		for i, s := range subjects {
			q[i] = strconv.Quote(s)
		}
		return strings.Join(q, ", ")
	}
	p, s := nodeSubjects()
	return fmt.Sprintf(`%s {
  jetstream: enabled
  users: [
    {
      nkey: %s
      permissions: {
        publish: { allow: [%s] }
        subscribe: { allow: [%s] }
      }
    }
  ]
}
`, name, pub, quote(p), quote(s))
}
