package session

import (
	"fmt"

	"github.com/google/uuid"
)

// ID identifies a session. It is a UUID (version 7 when the hub makes it, so
// ids sort by creation time); the zero value means "no session".
type ID [16]byte

// ParseID parses the canonical textual form of a session id.
func ParseID(s string) (ID, error) {
	u, err := uuid.Parse(s)
	if err != nil {
		return ID{}, fmt.Errorf("session id %q: %w", s, err)
	}
	return ID(u), nil
}

// MustParseID is ParseID for ids known to be valid, as in tests and examples.
// It panics on a malformed id.
func MustParseID(s string) ID {
	id, err := ParseID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// String returns the canonical textual form, or "" for the zero ID.
func (id ID) String() string {
	if id.IsZero() {
		return ""
	}
	return uuid.UUID(id).String()
}

// IsZero reports whether id is the zero ID.
func (id ID) IsZero() bool { return id == ID{} }

// MarshalText implements encoding.TextMarshaler.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler; the empty string is the
// zero ID.
func (id *ID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*id = ID{}
		return nil
	}
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}
