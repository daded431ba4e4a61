package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// CanonicalJSON returns the canonical form of a JSON value: no insignificant
// space, object keys sorted, numbers in their shortest exact form (1.0 and
// 1e0 are both 1). Two values are equal exactly when their canonical forms
// are equal bytes, which is how context conditions compare them.
func CanonicalJSON(raw []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not a JSON value: %v: %w", err, ErrMalformed)
	}
	if !atEnd(dec, raw) {
		return nil, fmt.Errorf("trailing data after the JSON value: %w", ErrMalformed)
	}
	var b bytes.Buffer
	if err := writeCanonical(&b, v); err != nil {
		return nil, err
	}
	return json.RawMessage(b.Bytes()), nil
}

// MustJSON returns the canonical JSON of a Go value. It panics if v cannot be
// encoded; it is meant for literals in tests and examples.
func MustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	c, err := CanonicalJSON(raw)
	if err != nil {
		panic(err)
	}
	return c
}

// Null is the canonical JSON null, the value of a missing context key.
func Null() json.RawMessage { return json.RawMessage("null") }

func writeCanonical(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		writeString(b, x)
	case json.Number:
		n, err := canonicalNumber(string(x))
		if err != nil {
			return err
		}
		b.WriteString(n)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			if err := writeCanonical(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("unexpected JSON value %T: %w", v, ErrMalformed)
	}
	return nil
}

// writeString writes s as a JSON string without HTML escaping, so "<"
// stays "<" whichever way a value arrives: as encoding/json writes it, by
// hand when no byte of s needs care (printable ASCII other than a quote or
// a backslash, the common case), through encoding/json otherwise.
func writeString(b *bytes.Buffer, s string) {
	if plainASCII(s) {
		b.Grow(len(s) + 2)
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode appends a newline
}

// plainASCII reports whether encoding/json writes s between quotes as it
// is: only ASCII from space on, no quote, no backslash.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m { //hubd:orderless sorted below
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// maxExponent bounds the decimal exponent of a number, so a value like
// 1e999999999 is refused instead of expanded.
const maxExponent = 400

// canonicalNumber writes numbers with an integral value as exact integers
// (1.0, 1e2 and 100 alike, of any size) and other numbers in the shortest
// form that round-trips a float64.
func canonicalNumber(s string) (string, error) {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		if exp, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+")); err != nil || exp > maxExponent || exp < -maxExponent {
			return "", fmt.Errorf("number %q is out of range: %w", s, ErrMalformed)
		}
	}
	var r big.Rat
	if _, ok := r.SetString(s); !ok {
		return "", fmt.Errorf("bad number %q: %w", s, ErrMalformed)
	}
	f, _ := r.Float64()
	if math.IsInf(f, 0) {
		return "", fmt.Errorf("number %q is out of range: %w", s, ErrMalformed)
	}
	if r.IsInt() {
		return r.Num().String(), nil
	}
	if f == math.Trunc(f) { // a fraction float64 cannot tell from an integer
		i, _ := new(big.Float).SetFloat64(f).Int(nil)
		return i.String(), nil
	}
	return strconv.FormatFloat(f, 'g', -1, 64), nil
}

// Number returns the value of a canonical JSON number, and false for any
// other JSON value.
func Number(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil
}

// maxValueDepth bounds the nesting of a JSON value in context and knobs.
const maxValueDepth = 64

// CheckValue reports whether v is a JSON value the hub stores: set, numbers
// finite, nesting at most 64 deep. Valid values are the rule, so it first
// checks in any order, and only for a bad value walks objects in key order
// to name the same error every time.
func CheckValue(v *structpb.Value) error {
	if valueOK(v, 0) {
		return nil
	}
	var b bytes.Buffer // only for a bad value, to find its first error
	return writeValue(&b, v, 0)
}

// valueOK reports whether v is valid, visiting object fields in any order.
func valueOK(v *structpb.Value, depth int) bool {
	if depth > maxValueDepth {
		return false
	}
	switch k := v.GetKind().(type) {
	case nil:
		return false
	case *structpb.Value_NullValue:
		return k.NullValue == structpb.NullValue_NULL_VALUE
	case *structpb.Value_NumberValue:
		return !math.IsNaN(k.NumberValue) && !math.IsInf(k.NumberValue, 0)
	case *structpb.Value_ListValue:
		for _, x := range k.ListValue.GetValues() {
			if !valueOK(x, depth+1) {
				return false
			}
		}
	case *structpb.Value_StructValue:
		for _, x := range k.StructValue.GetFields() { //hubd:orderless all must be valid; which is bad is found in key order by writeValue
			if !valueOK(x, depth+1) {
				return false
			}
		}
	}
	return true
}

// ValueJSON returns the canonical JSON of a stored value (see
// [CanonicalJSON]): how context values are kept and compared. A value
// [CheckValue] refuses is an ErrMalformed error.
func ValueJSON(v *structpb.Value) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := writeValue(&b, v, 0); err != nil {
		return nil, err
	}
	return json.RawMessage(b.Bytes()), nil
}

// writeValue writes v's canonical JSON, checking it (objects in key order,
// so the first error is always the same).
func writeValue(b *bytes.Buffer, v *structpb.Value, depth int) error {
	if depth > maxValueDepth {
		return fmt.Errorf("value nested deeper than %d: %w", maxValueDepth, ErrMalformed)
	}
	switch k := v.GetKind().(type) {
	case nil:
		return fmt.Errorf("value has no kind (use null_value for null): %w", ErrMalformed)
	case *structpb.Value_NullValue:
		if k.NullValue != structpb.NullValue_NULL_VALUE {
			return fmt.Errorf("null_value %d is not NULL_VALUE: %w", k.NullValue, ErrMalformed)
		}
		b.WriteString("null")
	case *structpb.Value_BoolValue:
		b.WriteString(strconv.FormatBool(k.BoolValue))
	case *structpb.Value_StringValue:
		writeString(b, k.StringValue)
	case *structpb.Value_NumberValue:
		if math.IsNaN(k.NumberValue) || math.IsInf(k.NumberValue, 0) {
			return fmt.Errorf("number %v is not finite: %w", k.NumberValue, ErrMalformed)
		}
		b.WriteString(floatString(k.NumberValue))
	case *structpb.Value_ListValue:
		b.WriteByte('[')
		for i, x := range k.ListValue.GetValues() {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeValue(b, x, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case *structpb.Value_StructValue:
		return writeFields(b, k.StructValue.GetFields(), depth)
	}
	return nil
}

func writeFields(b *bytes.Buffer, fields map[string]*structpb.Value, depth int) error {
	b.WriteByte('{')
	for i, name := range sortedKeys(fields) {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, name)
		b.WriteByte(':')
		if err := writeValue(b, fields[name], depth+1); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// floatString writes a finite float64 as CanonicalJSON writes the shortest
// decimal that reads back as it: integral values as integers, others in
// their shortest round-trip form. So 1e23 is 100000000000000000000000 both
// ways, not the double's exact 99999999999999991611392.
func floatString(f float64) string {
	if f != math.Trunc(f) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	if math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10) // exact; -0 is 0
	}
	s, err := canonicalNumber(strconv.FormatFloat(f, 'g', -1, 64))
	if err != nil {
		panic(fmt.Sprintf("session: canonical form of %v: %v", f, err)) // a finite float's exponent is at most 308
	}
	return s
}

// JSONValue parses a JSON value into its stored form. Numbers become
// float64 (integers beyond 2^53 lose precision, as in every JSON
// implementation that reads numbers as doubles); a number out of range is
// an ErrMalformed error.
func JSONValue(raw []byte) (*structpb.Value, error) {
	c, err := CanonicalJSON(raw)
	if err != nil {
		return nil, err
	}
	v := &structpb.Value{}
	if err := protojson.Unmarshal(c, v); err != nil {
		return nil, fmt.Errorf("not a JSON value: %v: %w", err, ErrMalformed)
	}
	return v, CheckValue(v)
}

// MustValue returns the stored form of a Go value encoded as JSON. It panics
// if v cannot be encoded; it is meant for literals in tests and examples.
func MustValue(v any) *structpb.Value {
	x, err := JSONValue(MustJSON(v))
	if err != nil {
		panic(err)
	}
	return x
}

// CanonicalValue returns a copy of v, a checked value ([CheckValue]), in
// canonical form: the stored form of its canonical JSON, as
// JSONValue(ValueJSON(v)) gives it, without writing the JSON. A checked
// value differs from that form only in what its encoding alone tells
// apart: the sign of a zero (-0 is 0) and unknown fields (dropped).
func CanonicalValue(v *structpb.Value) *structpb.Value {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return structpb.NewNullValue()
	case *structpb.Value_BoolValue:
		return structpb.NewBoolValue(k.BoolValue)
	case *structpb.Value_StringValue:
		return structpb.NewStringValue(k.StringValue)
	case *structpb.Value_NumberValue:
		n := k.NumberValue
		if n == 0 {
			n = 0 // a negative zero is zero
		}
		return structpb.NewNumberValue(n)
	case *structpb.Value_ListValue:
		l := &structpb.ListValue{Values: make([]*structpb.Value, len(k.ListValue.GetValues()))}
		for i, x := range k.ListValue.GetValues() {
			l.Values[i] = CanonicalValue(x)
		}
		return structpb.NewListValue(l)
	case *structpb.Value_StructValue:
		s := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(k.StructValue.GetFields()))}
		for name, x := range k.StructValue.GetFields() { //hubd:orderless a map of its own
			s.Fields[name] = CanonicalValue(x)
		}
		return structpb.NewStructValue(s)
	}
	return &structpb.Value{} // no kind: not a checked value
}
