package a2abridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/internal/a2apb"
)

// The A2A version the bridge speaks, and the interface it picks from a
// card.
const (
	protocolVersion = "1.0"
	bindingJSONRPC  = "JSONRPC"
)

// ErrRemote is the cause of a refusal or failure of the remote agent that
// retrying does not cure: a JSON-RPC error, a card without a JSON-RPC 1.0
// interface, an answer that is not A2A.
var ErrRemote = errors.New("a2a remote")

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error implements error.
func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// Is makes an rpcError an ErrRemote.
func (e *rpcError) Is(target error) bool { return target == ErrRemote }

// codeTaskNotFound is A2A's TaskNotFoundError; codeUnsupported its
// UnsupportedOperationError (SubscribeToTask of a task that has ended).
const (
	codeTaskNotFound = -32001
	codeUnsupported  = -32004
)

// transient is an error worth retrying: the remote was unreachable or
// answered 408, 429 or 5xx.
type transient struct{ err error }

func (e *transient) Error() string { return e.err.Error() }
func (e *transient) Unwrap() error { return e.err }

func isTransient(err error) bool {
	var t *transient
	return errors.As(err, &t)
}

// remote speaks A2A's JSON-RPC binding to one agent.
type remote struct {
	cardURL string
	headers map[string]string
	http    *http.Client
	retry   Backoff
	ids     atomic.Int64

	// Read from the card.
	url       string
	streaming bool
}

// header sets the headers of every request.
func (r *remote) header(req *http.Request) {
	for k, v := range r.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("A2A-Version", protocolVersion)
}

// fetchCard reads the agent card and picks its JSON-RPC 1.0 interface.
func (r *remote) fetchCard(ctx context.Context) error {
	return r.retry.do(ctx, func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.cardURL, nil)
		if err != nil {
			return err
		}
		r.header(req)
		body, err := r.roundTrip(req)
		if err != nil {
			return err
		}
		var card a2apb.AgentCard
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, &card); err != nil {
			return fmt.Errorf("agent card %s: %v: %w", r.cardURL, err, ErrRemote)
		}
		for _, i := range card.GetSupportedInterfaces() {
			if strings.EqualFold(i.GetProtocolBinding(), bindingJSONRPC) && i.GetProtocolVersion() == protocolVersion {
				r.url, r.streaming = i.GetUrl(), card.GetCapabilities().GetStreaming()
				return nil
			}
		}
		return fmt.Errorf("agent card %s has no interface with protocolBinding %q and protocolVersion %q: %w",
			r.cardURL, bindingJSONRPC, protocolVersion, ErrRemote)
	})
}

// roundTrip does req and returns its body: a transient error for a
// failure to connect or a status worth retrying, ErrRemote for another
// status.
func (r *remote) roundTrip(req *http.Request) ([]byte, error) {
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, &transient{err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, &transient{err}
	}
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("%s %s: %s: %s", req.Method, req.URL, resp.Status, bytes.TrimSpace(body))
		if retryStatus(resp.StatusCode) {
			return nil, &transient{err}
		}
		return nil, fmt.Errorf("%w: %w", err, ErrRemote)
	}
	return body, nil
}

// maxBody bounds an answer of the remote.
const maxBody = 16 << 20

func retryStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// request is a JSON-RPC request's HTTP request.
func (r *remote) request(ctx context.Context, method string, params proto.Message) (*http.Request, error) {
	p, err := protojson.Marshal(params)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      int64           `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}{"2.0", r.ids.Add(1), method, p})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	r.header(req)
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

// response is a JSON-RPC response.
type response struct {
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// decode reads a JSON-RPC response's result into out.
func decode(b []byte, out proto.Message) error {
	var resp response
	if err := json.Unmarshal(b, &resp); err != nil {
		return fmt.Errorf("not a JSON-RPC response: %v: %w", err, ErrRemote)
	}
	if resp.Error != nil {
		return resp.Error
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(resp.Result, out); err != nil {
		return fmt.Errorf("result: %v: %w", err, ErrRemote)
	}
	return nil
}

// call calls method, retrying transient failures.
func (r *remote) call(ctx context.Context, method string, params, out proto.Message) error {
	return r.retry.do(ctx, func() error {
		req, err := r.request(ctx, method, params)
		if err != nil {
			return err
		}
		b, err := r.roundTrip(req)
		if err != nil {
			return err
		}
		return decode(b, out)
	})
}

// stream calls a streaming method and hands each event to fn until the
// stream ends, fn returns false or an error. Opening the stream is
// retried; a stream that breaks is reported (transient), for the caller to
// resume as it sees fit.
func (r *remote) stream(ctx context.Context, method string, params proto.Message, fn func(*a2apb.StreamResponse) (bool, error)) error {
	var resp *http.Response
	err := r.retry.do(ctx, func() error {
		req, err := r.request(ctx, method, params)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", "text/event-stream")
		resp, err = r.http.Do(req)
		if err != nil {
			return &transient{err}
		}
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			defer resp.Body.Close()
			b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
			if resp.StatusCode == http.StatusOK {
				var ev a2apb.StreamResponse
				if err := decode(b, &ev); err != nil {
					return err // a JSON-RPC error in a plain answer
				}
				return fmt.Errorf("%s %s: answered %q, want text/event-stream: %w", method, r.url, resp.Header.Get("Content-Type"), ErrRemote)
			}
			err := fmt.Errorf("%s %s: %s: %s", method, r.url, resp.Status, bytes.TrimSpace(b))
			if retryStatus(resp.StatusCode) {
				return &transient{err}
			}
			return fmt.Errorf("%w: %w", err, ErrRemote)
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return readEvents(resp.Body, fn)
}

// readEvents reads server-sent events, each a JSON-RPC response whose
// result is a StreamResponse.
func readEvents(body io.Reader, fn func(*a2apb.StreamResponse) (bool, error)) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), maxBody)
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			if len(data) > 0 {
				data = append(data, '\n') // an event's data lines, joined
			}
			data = append(data, strings.TrimPrefix(v, " ")...)
			continue
		}
		if line != "" || len(data) == 0 {
			continue
		}
		var ev a2apb.StreamResponse
		err := decode(data, &ev)
		data = data[:0]
		if err != nil {
			return err
		}
		if more, err := fn(&ev); err != nil || !more {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return &transient{err}
	}
	return &transient{io.ErrUnexpectedEOF}
}

// Backoff bounds the retries of a call to the remote: exponential from
// Base, capped at Max, for at most For in all.
type Backoff struct {
	Base, Max, For time.Duration
}

// DefaultBackoff is the retry of a transient failure: from 200 ms to 5 s
// between tries, for 30 s.
func DefaultBackoff() Backoff {
	return Backoff{Base: 200 * time.Millisecond, Max: 5 * time.Second, For: 30 * time.Second}
}

// do calls f until it succeeds, fails for good, ctx ends, or the budget
// is spent (the last error is returned).
func (b Backoff) do(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(b.For)
	delay := b.Base
	for {
		err := f()
		if err == nil || !isTransient(err) {
			return err
		}
		if time.Now().Add(delay).After(deadline) {
			return fmt.Errorf("%w (gave up after %s)", err, b.For)
		}
		if !sleep(ctx, delay) {
			return errors.Join(ctx.Err(), err)
		}
		delay = min(2*delay, b.Max)
	}
}
