package a2aconf_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hubd/hubd/internal/a2aconf"
)

func TestParse(t *testing.T) {
	const skill = `{"id":"d","name":"D","description":"x","tags":["t"]}`
	for _, c := range []struct {
		name, in, err string
	}{
		{"both", `{"expose":[{"agent":"writer","description":"w","skills":[` + skill + `]}],"remote":[{"agent":"tr","card":"http://h/.well-known/agent-card.json"}]}`, ""},
		{"empty", `{}`, ""},
		{"unknown field", `{"exposed":[]}`, "unknown field"},
		{"no description", `{"expose":[{"agent":"w","skills":[` + skill + `]}]}`, "expose[0] (w): want a description"},
		{"no skill", `{"expose":[{"agent":"w","description":"x"}]}`, "want at least one skill"},
		{"skill without tags", `{"expose":[{"agent":"w","description":"x","skills":[{"id":"d","name":"D","description":"x"}]}]}`, "skill 0: want"},
		{"card not http", `{"remote":[{"agent":"tr","card":"ftp://h/c"}]}`, `card "ftp://h/c": want an http(s) URL`},
		{"twice", `{"expose":[{"agent":"a","description":"x","skills":[` + skill + `]}],"remote":[{"agent":"a","card":"http://h/c"}]}`, "agent a is named twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := a2aconf.Parse(strings.NewReader(c.in))
			if c.err == "" {
				if err != nil || f == nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, a2aconf.ErrInvalid) || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Parse: %v, want ErrInvalid with %q", err, c.err)
			}
		})
	}
}
