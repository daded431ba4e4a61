package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
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
		for i, k := range slices.Sorted(maps.Keys(x)) {
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
// stays "<" whichever way a value arrives.
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode appends a newline
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
