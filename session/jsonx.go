package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// strictUnmarshal decodes exactly one JSON value into v, refusing unknown
// fields and trailing data.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if !atEnd(dec, b) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// atEnd reports whether only JSON white space follows the value dec has just
// decoded from b. (Decoder.More alone is not enough: it reports false before
// a stray ']' or '}', so `1]` would pass.)
func atEnd(dec *json.Decoder, b []byte) bool {
	return len(bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n")) == 0
}

// EncodeMeta returns the stored form of a session's metadata.
func EncodeMeta(m *Meta) ([]byte, error) { return json.Marshal(m) }

// DecodeMeta parses the stored form of a session's metadata. A record that
// does not parse is ErrCorrupt.
func DecodeMeta(b []byte) (*Meta, error) {
	var m Meta
	if err := strictUnmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("session metadata: %v: %w", err, ErrCorrupt)
	}
	return &m, nil
}
