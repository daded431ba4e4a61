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
		enc, _ := json.Marshal(x) // a string always encodes
		b.Write(enc)
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
			enc, _ := json.Marshal(k)
			b.Write(enc)
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

// canonicalNumber writes integers exactly (any size) and other numbers in
// the shortest form that round-trips a float64.
func canonicalNumber(s string) (string, error) {
	if !strings.ContainsAny(s, ".eE") {
		var i big.Int
		if _, ok := i.SetString(s, 10); !ok {
			return "", fmt.Errorf("bad number %q: %w", s, ErrMalformed)
		}
		return i.String(), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return "", fmt.Errorf("bad number %q: %w", s, ErrMalformed)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10), nil
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
