package session_test

import (
	"strings"
	"testing"

	"github.com/hubd/hubd/session"
)

// TestParseIDSpellings: a session id is read in its 8-4-4-4-12 form only
// (either case); ParseIDOf also wants one, and not the nil UUID.
func TestParseIDSpellings(t *testing.T) {
	const id = "0194d1a0-0000-7000-8000-00000000000a"
	for _, tc := range []struct {
		in   string
		want string // a part of the error; "" when it parses
	}{
		{id, ""},
		{strings.ToUpper(id), ""},
		{"", "is required"},
		{"x", "is not a UUID"},
		{strings.ReplaceAll(id, "-", ""), "is not a UUID"},
		{"{" + id + "}", "is not a UUID"},
		{"urn:uuid:" + id, "is not a UUID"},
		{id[:35] + "g", "is not a UUID"},
		{"00000000-0000-0000-0000-000000000000", "is the nil UUID"},
	} {
		got, err := session.ParseIDOf("parent_session_id", tc.in)
		switch {
		case tc.want == "" && (err != nil || got.String() != id):
			t.Errorf("ParseIDOf(%q) = %v, %v; want %s", tc.in, got, err, id)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "parent_session_id")):
			t.Errorf("ParseIDOf(%q) = %v; want an error naming parent_session_id with %q", tc.in, err, tc.want)
		}
	}
}
