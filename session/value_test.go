package session_test

import (
	"encoding/json"
	"testing"

	"github.com/hubd/hubd/session"
)

func TestCanonicalJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		// Scalars.
		{`null`, `null`},
		{`true`, `true`},
		{` false `, `false`},
		{`"a"`, `"a"`},
		{`"\u00e9"`, `"é"`},
		{`"é"`, `"é"`},
		{`"<&>"`, `"<&>"`}, // no HTML escaping: "<" stays "<" whichever way it comes
		{`"\u003c"`, `"<"`},
		{`"tab\there"`, `"tab\there"`},
		// Numbers: 1, 1.0 and 1e0 are one value.
		{`1`, `1`},
		{`1.0`, `1`},
		{`1e0`, `1`},
		{`1E0`, `1`},
		{`10e-1`, `1`},
		{`0.1e1`, `1`},
		{`100`, `100`},
		{`1e2`, `100`},
		{`1.5`, `1.5`},
		{`1.50`, `1.5`},
		{`15e-1`, `1.5`},
		{`-2.25`, `-2.25`},
		{`1e-7`, `1e-07`},
		{`0.1`, `0.1`},
		{`0`, `0`},
		{`-0`, `0`},
		{`-0.0`, `0`},
		{`0e5`, `0`},
		// Integers are exact at any size.
		{`9007199254740993`, `9007199254740993`},
		{`12345678901234567890123`, `12345678901234567890123`},
		{`-12345678901234567890123`, `-12345678901234567890123`},
		// Containers: no space, keys sorted at every level.
		{`[]`, `[]`},
		{`{}`, `{}`},
		{` [ 1 , 2.0 , "x" ] `, `[1,2,"x"]`},
		{`{"b": 1, "a": 2}`, `{"a":2,"b":1}`},
		{"{\n\t\"b\" : [ {\"d\":1, \"c\":2} ],\r\n \"a\" : {\"z\":null, \"y\":true}\n}", `{"a":{"y":true,"z":null},"b":[{"c":2,"d":1}]}`},
		{`{"B":1,"a":2,"_":3}`, `{"B":1,"_":3,"a":2}`}, // byte order
	}
	for _, tt := range tests {
		got, err := session.CanonicalJSON([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("CanonicalJSON(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
			continue
		}
		again, err := session.CanonicalJSON(got)
		if err != nil || string(again) != string(got) {
			t.Errorf("CanonicalJSON is not idempotent on %s: %s, %v", got, again, err)
		}
	}
}

func TestCanonicalJSONEquality(t *testing.T) {
	same := [][2]string{
		{`1`, `1.0`},
		{`1`, `1e0`},
		{`1.0`, `1e0`},
		{`{"a":1,"b":[1,2]}`, ` { "b" : [ 1.0 , 2e0 ] , "a" : 10e-1 } `},
		{`"<"`, `"<"`},
		{`1e20`, `100000000000000000000`},
		{`9007199254740992.0`, `9007199254740992`},
		{`-0.0`, `0`},
		{`-0`, `0`},
	}
	for _, p := range same {
		a, errA := session.CanonicalJSON([]byte(p[0]))
		b, errB := session.CanonicalJSON([]byte(p[1]))
		if errA != nil || errB != nil || string(a) != string(b) {
			t.Errorf("%s and %s should be equal: %s (%v) vs %s (%v)", p[0], p[1], a, errA, b, errB)
		}
	}
	different := [][2]string{
		{`1`, `"1"`},
		{`1`, `1.5`},
		{`1`, `true`},
		{`null`, `"null"`},
		{`[1,2]`, `[2,1]`},
		{`12345678901234567890123`, `12345678901234567890124`},
		{`{"a":1}`, `{"a":1,"b":null}`},
	}
	for _, p := range different {
		a, _ := session.CanonicalJSON([]byte(p[0]))
		b, _ := session.CanonicalJSON([]byte(p[1]))
		if string(a) == string(b) {
			t.Errorf("%s and %s should differ, both are %s", p[0], p[1], a)
		}
	}
}

func TestCanonicalJSONInvalid(t *testing.T) {
	for _, in := range []string{
		``,
		`   `,
		`{`,
		`[1,]`,
		`{"a":}`,
		`nul`,
		`'a'`,
		`01`,
		`+1`,
		`.5`,
		`NaN`,
		`1e400`, // not a finite float64
		`-1e400`,
		`1 2`, // two values
		`{} {}`,
		`"a" "b"`,
		`1]`, // stray closers after a value
		`{"a":1}}`,
		`[1]]`,
		`"a",`,
	} {
		if got, err := session.CanonicalJSON([]byte(in)); err == nil {
			t.Errorf("CanonicalJSON(%q) = %s, want an error", in, got)
		} else {
			wantErr(t, err, session.ErrMalformed)
		}
	}
}

func TestNumber(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{`1`, 1, true},
		{`0`, 0, true},
		{`-2.5`, -2.5, true},
		{`1e+20`, 1e20, true},
		{`1e-07`, 1e-7, true},
		{`12345678901234567890123`, 12345678901234567890123, true},
		{`"1"`, 0, false},
		{`true`, 0, false},
		{`null`, 0, false},
		{`[1]`, 0, false},
		{`{"a":1}`, 0, false},
		{``, 0, false},
		{`-`, 0, false},
	}
	for _, tt := range tests {
		got, ok := session.Number(json.RawMessage(tt.in))
		if ok != tt.ok || got != tt.want {
			t.Errorf("Number(%s) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	// Every canonical number is a Number.
	for _, in := range []string{`3.0`, `-0`, `1e2`, `0.1`} {
		c, err := session.CanonicalJSON([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := session.Number(c); !ok {
			t.Errorf("Number(%s) (canonical of %s) = false", c, in)
		}
	}
}

func TestMustJSON(t *testing.T) {
	got := session.MustJSON(map[string]any{"b": 1.0, "a": []any{"x", nil}})
	if want := `{"a":["x",null],"b":1}`; string(got) != want {
		t.Errorf("MustJSON = %s, want %s", got, want)
	}
	if string(session.Null()) != "null" {
		t.Errorf("Null() = %s", session.Null())
	}
	defer func() {
		if recover() == nil {
			t.Error("MustJSON of a func did not panic")
		}
	}()
	session.MustJSON(func() {})
}

func TestContextUpdateCanonical(t *testing.T) {
	u := session.ContextUpdate{
		Set:    map[string]json.RawMessage{"a": json.RawMessage(` {"y": 1.0, "x": 2} `), "b": json.RawMessage(`1e0`)},
		Delete: []string{"c"},
	}
	got, err := u.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Set["a"]) != `{"x":2,"y":1}` || string(got.Set["b"]) != `1` || len(got.Delete) != 1 {
		t.Errorf("Canonical() = %+v", got)
	}
	if string(u.Set["a"]) != ` {"y": 1.0, "x": 2} ` {
		t.Error("Canonical modified its receiver")
	}
	_, err = session.ContextUpdate{Set: map[string]json.RawMessage{"ok": json.RawMessage(`1`), "bad": json.RawMessage(`{`)}}.Canonical()
	wantErr(t, err, session.ErrMalformed, `"bad"`)

	if !(session.ContextUpdate{}).Empty() || (session.ContextUpdate{Delete: []string{"x"}}).Empty() ||
		(session.ContextUpdate{Set: map[string]json.RawMessage{"x": session.Null()}}).Empty() {
		t.Error("Empty is wrong")
	}
}

func TestUsageAdd(t *testing.T) {
	got := session.Usage{InputTokens: 1, OutputTokens: 2, CostUSD: 0.5}.Add(session.Usage{InputTokens: 10, OutputTokens: 20, CostUSD: 0.25})
	if got != (session.Usage{InputTokens: 11, OutputTokens: 22, CostUSD: 0.75}) {
		t.Errorf("Add = %+v", got)
	}
}
