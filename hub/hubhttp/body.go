package hubhttp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/session"
)

// MaxJSONDepth is how deep a JSON body may nest: a JSON value at most
// hubgrpc.MaxValueDepth deep, inside the request's own objects.
const MaxJSONDepth = hubgrpc.MaxValueDepth + 16

// checkBody reads a JSON API request's body (at most MaxBodyBytes) and
// checks it token by token before protojson builds anything of it: a
// body over the limit is TOO_LARGE naming --max-request-bytes, one nested
// deeper than MaxJSONDepth MALFORMED, one with more keys and values than
// an envelope holds (MaxEnvelopeBytes/2) TOO_LARGE naming
// --max-envelope-bytes.
func (a *API) checkBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		body, err := a.readBody(r)
		if err == nil {
			err = checkJSON(body, MaxJSONDepth, a.cfg.MaxEnvelopeBytes)
		}
		if err != nil {
			var le *hub.LimitError
			if f := a.cfg.OnLimit; f != nil && errors.As(err, &le) {
				f(le.Limit())
			}
			a.fail(w, r, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// readBody reads the request's body, refusing one over MaxBodyBytes.
func (a *API) readBody(r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= a.cfg.MaxBodyBytes {
		buf.Grow(int(n))
	}
	_, err := buf.ReadFrom(r.Body) // a MaxBytesReader (see credentials)
	var big *http.MaxBytesError
	switch {
	case errors.As(err, &big):
		return nil, &hub.LimitError{What: "the request body is larger", Flag: "--max-request-bytes", Value: big.Limit, Err: hub.ErrTooLarge}
	case err != nil:
		return nil, fmt.Errorf("reading the request body: %v: %w", err, session.ErrMalformed)
	}
	return buf.Bytes(), nil
}

// checkJSON counts the depth and the keys and values of a JSON text
// without decoding it (what is not JSON is left to the decoder to name).
func checkJSON(b []byte, maxDepth, envelopeBytes int) error {
	maxItems := envelopeBytes / 2
	depth, items := 0, 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			i = stringEnd(b, i)
			items++
		case c == '{' || c == '[':
			if depth++; depth > maxDepth {
				return fmt.Errorf("the JSON body is nested deeper than %d (a value at most %d deep): %w", maxDepth, hubgrpc.MaxValueDepth, session.ErrMalformed)
			}
			items++
		case c == '}' || c == ']':
			depth--
		case c == '-' || c == 't' || c == 'f' || c == 'n' || (c >= '0' && c <= '9'):
			for i+1 < len(b) && scalarByte(b[i+1]) {
				i++
			}
			items++
		}
		if items > maxItems {
			return &hub.LimitError{Flag: "--max-envelope-bytes", Value: int64(envelopeBytes), Err: hub.ErrTooLarge,
				What: fmt.Sprintf("the JSON body holds more than %d keys and values, more than an envelope can", maxItems)}
		}
	}
	return nil
}

// stringEnd returns the index of the quote that ends the string whose
// opening quote is at i (len(b) when it does not end).
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(b)
}

// scalarByte reports whether c may continue a number or a literal.
func scalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '.' || c == '+' || c == '-' || c == 'E'
}
