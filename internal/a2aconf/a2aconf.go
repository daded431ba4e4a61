// Package a2aconf reads the file that configures hubd's A2A doors
// (hubd serve --a2a FILE): which hubd agents are exposed to outside A2A
// clients, with their skills, and which outside A2A agents take part in
// sessions under a hubd agent name.
//
//	{
//	  "expose": [
//	    {"agent": "writer", "description": "Drafts short texts.",
//	     "skills": [{"id": "draft", "name": "Drafting", "description": "A first draft from a brief.",
//	                 "tags": ["writing"], "examples": ["a haiku about tides"]}]}
//	  ],
//	  "remote": [
//	    {"agent": "translator", "card": "https://translate.example/.well-known/agent-card.json",
//	     "token_file": "/etc/hubd/translator.token", "headers": {"X-Api-Key": "..."}}
//	  ]
//	}
package a2aconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
)

// File is the whole configuration.
type File struct {
	// Expose are the hubd agents outside A2A clients may send messages to.
	Expose []Exposed `json:"expose"`
	// Remote are outside A2A agents, each a hubd agent name in sessions.
	Remote []Remote `json:"remote"`
}

// Exposed is a hubd agent served over A2A.
type Exposed struct {
	// Agent is the hubd agent's name.
	Agent string `json:"agent"`
	// Description is its agent card's description.
	Description string `json:"description"`
	// Skills are its card's skills.
	Skills []Skill `json:"skills"`
}

// Skill is one skill of an exposed agent's card.
type Skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
}

// Remote is an outside A2A agent registered under a hubd agent name.
type Remote struct {
	// Agent is the hubd agent name it takes part as.
	Agent string `json:"agent"`
	// Card is the URL of its agent card.
	Card string `json:"card"`
	// TokenFile holds the hubd bearer token of Agent (with --tokens).
	TokenFile string `json:"token_file,omitempty"`
	// Headers are sent with every request to the remote agent (its
	// credentials, e.g. "Authorization": "Bearer ...").
	Headers map[string]string `json:"headers,omitempty"`
}

// Exposed is f's exposed agents; none for a nil f.
func (f *File) Exposed() []Exposed {
	if f == nil {
		return nil
	}
	return f.Expose
}

// Remotes is f's remote agents; none for a nil f.
func (f *File) Remotes() []Remote {
	if f == nil {
		return nil
	}
	return f.Remote
}

// ErrInvalid is the cause of a file that is not a valid configuration.
var ErrInvalid = errors.New("a2a configuration")

// Parse reads a configuration, refusing unknown fields, an agent named
// twice and missing required fields, each error naming the entry.
func Parse(r io.Reader) (*File, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &f, nil
}

func (f *File) check() error {
	var names []string
	for i, e := range f.Expose {
		switch {
		case strings.TrimSpace(e.Agent) == "":
			return fmt.Errorf("expose[%d]: want an agent name", i)
		case e.Description == "":
			return fmt.Errorf("expose[%d] (%s): want a description", i, e.Agent)
		case len(e.Skills) == 0:
			return fmt.Errorf("expose[%d] (%s): want at least one skill", i, e.Agent)
		}
		for j, s := range e.Skills {
			if s.ID == "" || s.Name == "" || s.Description == "" || len(s.Tags) == 0 {
				return fmt.Errorf("expose[%d] (%s) skill %d: want an id, a name, a description and tags", i, e.Agent, j)
			}
		}
		names = append(names, "expose "+e.Agent)
	}
	for i, r := range f.Remote {
		if strings.TrimSpace(r.Agent) == "" {
			return fmt.Errorf("remote[%d]: want an agent name", i)
		}
		u, err := url.Parse(r.Card)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("remote[%d] (%s): card %q: want an http(s) URL", i, r.Agent, r.Card)
		}
		names = append(names, "remote "+r.Agent)
	}
	for i, n := range names {
		agent := n[strings.IndexByte(n, ' ')+1:]
		for _, m := range names[:i] {
			if m[strings.IndexByte(m, ' ')+1:] == agent {
				return fmt.Errorf("agent %s is named twice (%s, %s)", agent, m, n)
			}
		}
	}
	return nil
}
