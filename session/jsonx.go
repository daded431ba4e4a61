package session

import (
	"bytes"
	"encoding/json"
)

// atEnd reports whether only JSON white space follows the value dec has just
// decoded from b. (Decoder.More alone is not enough: it reports false before
// a stray ']' or '}', so `1]` would pass.)
func atEnd(dec *json.Decoder, b []byte) bool {
	return len(bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n")) == 0
}
