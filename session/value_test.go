package session_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

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
		``, `   `, `{`, `[1,]`, `{"a":}`, `nul`, `'a'`, `01`, `+1`, `.5`, `NaN`,
		`1e400`, `-1e400`, // not a finite float64
		`1e999999999999`,
		`1 2`, `{} {}`, `"a" "b"`, // two values
		`1]`, `{"a":1}}`, `[1]]`, `"a",`, // stray closers after a value
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

func TestCheckValue(t *testing.T) {
	list := func(vs ...*structpb.Value) *structpb.Value {
		return structpb.NewListValue(&structpb.ListValue{Values: vs})
	}
	obj := func(k string, v *structpb.Value) *structpb.Value {
		return structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{k: v}})
	}
	tests := []struct {
		name string
		v    *structpb.Value
		frag string // "": valid
	}{
		{"null", structpb.NewNullValue(), ""},
		{"number", structpb.NewNumberValue(-1.5), ""},
		{"largest float", structpb.NewNumberValue(math.MaxFloat64), ""},
		{"string", structpb.NewStringValue(""), ""},
		{"bool", structpb.NewBoolValue(false), ""},
		{"empty list", list(), ""},
		{"empty object", structpb.NewStructValue(&structpb.Struct{}), ""},
		{"64 deep", nested(64), ""},
		{"64 deep in objects", func() *structpb.Value {
			v := structpb.NewNullValue()
			for range 64 {
				v = obj("k", v)
			}
			return v
		}(), ""},
		{"NaN", structpb.NewNumberValue(math.NaN()), "NaN is not finite"},
		{"+Inf", structpb.NewNumberValue(math.Inf(1)), "+Inf is not finite"},
		{"-Inf in a list", list(structpb.NewNullValue(), structpb.NewNumberValue(math.Inf(-1))), "-Inf"},
		{"NaN in an object", obj("k", structpb.NewNumberValue(math.NaN())), "NaN"},
		{"no kind", &structpb.Value{}, "no kind"},
		{"nil", nil, "no kind"},
		{"no kind in a list", list(&structpb.Value{}), "no kind"},
		{"nil in an object", obj("k", nil), "no kind"},
		{"65 deep", nested(65), "deeper than 64"},
		{"65 deep in objects", func() *structpb.Value {
			v := structpb.NewNullValue()
			for range 65 {
				v = obj("k", v)
			}
			return v
		}(), "deeper than 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := session.CheckValue(tt.v)
			if tt.frag == "" {
				if err != nil {
					t.Fatalf("CheckValue = %v", err)
				}
				if _, err := session.ValueJSON(tt.v); err != nil {
					t.Fatalf("ValueJSON of a valid value: %v", err)
				}
				return
			}
			wantErr(t, err, session.ErrMalformed, tt.frag)
			_, err = session.ValueJSON(tt.v)
			wantErr(t, err, session.ErrMalformed, tt.frag)
		})
	}
}

// TestValueJSONIsCanonical: the canonical JSON of a stored value is
// CanonicalJSON of the JSON text it was parsed from, and parsing it back
// gives the same value.
func TestValueJSONIsCanonical(t *testing.T) {
	for _, in := range []string{
		`null`, `true`, `false`, `""`, `"a"`, `"\u00e9<&>\u2028"`, `"tab\tand\nnewline\u0000"`,
		`0`, `-0`, `-0.0`, `1`, `1.0`, `1e0`, `-2.25`, `1.50`, `0.1`, `1e-7`, `1e20`, `1e21`, `1e23`, `1.5e300`, `-1e-300`, `1.7976931348623157e308`,
		`123456789`, `9007199254740991`, `9007199254740992`, `-9007199254740992`, `9007199254740994`, `12345678901234568000000`, `4.35`, `1127000000000000.1`, `5e-324`,
		`[]`, `{}`, `[1,[2,[3]]]`, `{"b":1,"a":[1e0,"x",null,true]}`, `{"B":1,"a":2,"_":3}`,
		` { "z" : [ ] , "a" : { "y" : 2.50 } } `,
	} {
		canon, err := session.CanonicalJSON([]byte(in))
		if err != nil {
			t.Fatalf("CanonicalJSON(%s): %v", in, err)
		}
		v, err := session.JSONValue([]byte(in))
		if err != nil {
			t.Fatalf("JSONValue(%s): %v", in, err)
		}
		got, err := session.ValueJSON(v)
		if err != nil || string(got) != string(canon) {
			t.Errorf("ValueJSON(JSONValue(%s)) = %s, %v; CanonicalJSON gives %s", in, got, err, canon)
		}
		back, err := session.JSONValue(got)
		if err != nil || !proto.Equal(back, v) {
			t.Errorf("JSONValue(%s) = %v, %v; want %v", got, back, err, v)
		}
	}
}

// A stored value's numbers are doubles: a number with more digits than a
// double holds (an integer past 2^53 that is not the shortest decimal of
// its double) is exact in CanonicalJSON but rounded in a stored value, the
// one place the two differ.
func TestValueJSONLargeIntegers(t *testing.T) {
	for _, tt := range []struct{ in, canon, value string }{
		{`9007199254740993`, `9007199254740993`, `9007199254740992`},
		{`12345678901234567890123`, `12345678901234567890123`, `12345678901234568000000`},
	} {
		canon, _ := session.CanonicalJSON([]byte(tt.in))
		v, err := session.JSONValue([]byte(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := session.ValueJSON(v)
		if string(canon) != tt.canon || string(got) != tt.value {
			t.Errorf("%s: CanonicalJSON %s, ValueJSON %s; want %s and %s", tt.in, canon, got, tt.canon, tt.value)
		}
	}
}

func TestJSONValueInvalid(t *testing.T) {
	deep := ""
	for range 65 {
		deep = "[" + deep
	}
	deep += "1"
	for range 65 {
		deep += "]"
	}
	for _, in := range []string{``, `{`, `NaN`, `1e400`, `1 2`, `[1]]`, `'a'`, deep} {
		if v, err := session.JSONValue([]byte(in)); err == nil {
			t.Errorf("JSONValue(%.20q) = %v, want an error", in, v)
		} else {
			wantErr(t, err, session.ErrMalformed)
		}
	}
}

func TestMustValue(t *testing.T) {
	v := session.MustValue(map[string]any{"b": 1.0, "a": []any{"x", nil, 2}})
	got, err := session.ValueJSON(v)
	if want := `{"a":["x",null,2],"b":1}`; err != nil || string(got) != want {
		t.Errorf("MustValue = %s, %v; want %s", got, err, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustValue of a func did not panic")
		}
	}()
	session.MustValue(func() {})
}

// TestValueJSONStrings: strings (values and object keys) are written as
// encoding/json writes them without HTML escaping, whether they take the
// plain path (printable ASCII) or need escapes: every byte alone and
// among plain text, quotes, backslashes, controls, U+2028, invalid UTF-8.
func TestValueJSONStrings(t *testing.T) {
	strs := []string{"", "plain text", `a"b`, `a\b`, "<&>", "tab\there", "nl\n", "\x7f", "é", "日本", "\u2028\u2029", "\xff\xfe", "a\x00b"}
	for c := range 256 {
		strs = append(strs, string([]byte{byte(c)}), "ab"+string([]byte{byte(c)})+"cd")
	}
	for _, s := range strs {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		w := strings.TrimSuffix(want.String(), "\n")
		if got, err := session.ValueJSON(structpb.NewStringValue(s)); err != nil || string(got) != w {
			t.Errorf("ValueJSON(%q) = %s, %v; want %s", s, got, err, w)
		}
		obj := &structpb.Value{Kind: &structpb.Value_StructValue{StructValue: &structpb.Struct{
			Fields: map[string]*structpb.Value{s: structpb.NewNullValue(), "~": structpb.NewBoolValue(true)}}}}
		wantObj := "{" + w + `:null,"~":true}`
		if s > "~" {
			wantObj = `{"~":true,` + w + ":null}"
		}
		if s == "~" {
			continue
		}
		if got, err := session.ValueJSON(obj); err != nil || string(got) != wantObj {
			t.Errorf("ValueJSON of an object with key %q = %s, %v; want %s", s, got, err, wantObj)
		}
	}
}

// TestCanonicalValue: CanonicalValue gives exactly the stored form of a
// value's canonical JSON (JSONValue of ValueJSON), the same bytes, for
// values parsed as a client sends them (a negative zero kept), and drops
// unknown fields.
func TestCanonicalValue(t *testing.T) {
	for _, in := range []string{
		`null`, `true`, `false`, `""`, `"\u00e9<&>\u2028"`, `0`, `-0`, `-0.0`, `1.0`, `-2.25`, `0.1`, `1e-7`, `1e21`, `1e23`,
		`1.5e300`, `-1e-300`, `5e-324`, `9007199254740993`, `12345678901234567890123`, `-9007199254740992`,
		`[]`, `{}`, `[-0,[0.0,[-0e5]]]`, `{"b":-0,"a":[1e0,"x",null,true,{"z":-0.0}]}`,
	} {
		v := &structpb.Value{}
		if err := protojson.Unmarshal([]byte(in), v); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		raw, err := session.ValueJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := session.JSONValue(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := session.CanonicalValue(v); !bytes.Equal(storedForm(t, got), storedForm(t, want)) {
			t.Errorf("CanonicalValue(%s) = %v; want %v", in, got, want)
		}
	}
	v := structpb.NewStringValue("x")
	v.ProtoReflect().SetUnknown([]byte{0xf8, 0x01, 0x01}) // field 31, varint 1
	if got := session.CanonicalValue(v); len(got.ProtoReflect().GetUnknown()) != 0 || got.GetStringValue() != "x" {
		t.Errorf("CanonicalValue kept unknown fields: %v", got)
	}
}

func storedForm(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
