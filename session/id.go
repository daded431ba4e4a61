package session

import (
	"fmt"

	"github.com/google/uuid"
)

// ID identifies a session. It is a UUID (version 7 when the hub makes it, so
// ids sort by creation time); the zero value means "no session".
type ID [16]byte

// ParseID parses the canonical textual form of a session id: a UUID as 32
// hex digits in groups of 8-4-4-4-12 (either case). The other forms
// uuid.Parse takes (braces, a "urn:uuid:" prefix, no hyphens) are
// refused, so one session has one spelling on the wire.
func ParseID(s string) (ID, error) {
	if len(s) != uuidLen {
		return ID{}, fmt.Errorf("session id %.60q is not a UUID (8-4-4-4-12 hex digits)", s)
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return ID{}, fmt.Errorf("session id %q is not a UUID (8-4-4-4-12 hex digits)", s)
	}
	return ID(u), nil
}

// uuidLen is the length of a UUID's canonical textual form.
const uuidLen = 36

// CheckUUID reports whether s, the value of field, is a UUID as the hub
// writes one (an envelope's or a session's id): 8-4-4-4-12 lowercase hex
// digits. An id stored as a client gave it must be one the hub would
// match. The error is ErrMalformed naming field.
func CheckUUID(field, s string) error {
	if len(s) == uuidLen {
		if u, err := uuid.Parse(s); err == nil && u.String() == s {
			return nil
		}
	}
	return fmt.Errorf("%s %.60q is not a UUID as the hub writes one (8-4-4-4-12 lowercase hex digits): %w", field, s, ErrMalformed)
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

// ParseIDOf parses the session id a request gives in field: required, a
// UUID (ParseID), not the nil UUID. Its errors are ErrMalformed naming
// field.
func ParseIDOf(field, s string) (ID, error) {
	if s == "" {
		return ID{}, fmt.Errorf("%s is required: %w", field, ErrMalformed)
	}
	id, err := ParseID(s)
	if err != nil {
		return ID{}, fmt.Errorf("%s: %v: %w", field, err, ErrMalformed)
	}
	if id.IsZero() {
		return ID{}, fmt.Errorf("%s %s is the nil UUID, which names no session: %w", field, s, ErrMalformed)
	}
	return id, nil
}
