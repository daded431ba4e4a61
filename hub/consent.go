package hub

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hubd/hubd/session"
)

// Consent says whom each agent lets put it into a session without its
// acknowledgement (a participant marked auto_accept by the creator):
// invitee → creators, "*" for anyone. With Config.RequireConsent (a hub
// with tokens or certificates), an auto_accept the invitee has not
// consented to is dropped: the invitee is invited and must acknowledge,
// as any invitee. An agent may always add itself.
type Consent map[string][]string

// Allows reports whether creator may add invitee without its
// acknowledgement.
func (c Consent) Allows(creator, invitee string) bool {
	if creator == invitee {
		return true
	}
	may := c[invitee]
	return slices.Contains(may, creator) || slices.Contains(may, "*")
}

// With is a copy of c in which invitee also consents to creator.
func (c Consent) With(invitee, creator string) Consent {
	out := make(Consent, len(c)+1)
	for k, v := range c {
		out[k] = slices.Clone(v)
	}
	out[invitee] = append(out[invitee], creator)
	return out
}

// ParseConsent reads a consent file: one line per invitee, the invitee's
// name then the creators who may auto-add it ("*": anyone), separated by
// spaces; blank lines and lines starting with '#' are skipped; an invitee
// named on several lines gets all their creators.
//
//	# bob takes sessions from alice and carol without acknowledging
//	bob alice carol
//	ci-runner *
func ParseConsent(r io.Reader) (Consent, error) {
	c := Consent{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			return nil, fmt.Errorf("consent line %d: want \"invitee creator...\", got %q", n, line)
		}
		for _, name := range f {
			if name == "*" && name != f[0] {
				continue
			}
			if err := session.CheckName(name); err != nil {
				return nil, fmt.Errorf("consent line %d: %w", n, err)
			}
		}
		c[f[0]] = append(c[f[0]], f[1:]...)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("consent: %w", err)
	}
	return c, nil
}
