package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The JSON form of an envelope is flat: the header fields below, then the
// payload's fields at the same level ("text" for a text envelope; "body",
// "routing", "context_updates", "usage" for a packet; "set", "delete" for a
// context set; "reason" for a close; ...). Custom payloads are "data"
// (base64). It is the form of `hubd sessions export`, of `hubd graph
// simulate` input and of test scripts:
//
//	{"seq":3,"from":"alice","type":"packet","body":"over to you",
//	 "routing":{"kind":"handoff","tool":"transfer_to_bob"}}
type envelopeHeader struct {
	Session     ID              `json:"session,omitzero"`
	Seq         uint64          `json:"seq,omitempty"`
	ID          uuid.UUID       `json:"id,omitzero"`
	From        string          `json:"from,omitempty"`
	Audience    json.RawMessage `json:"audience,omitempty"`
	Type        string          `json:"type"`
	Causation   uuid.UUID       `json:"causation,omitzero"`
	ClientMsgID string          `json:"client_msg_id,omitempty"`
	Call        *callJSON       `json:"call,omitempty"`
	TraceParent string          `json:"traceparent,omitempty"`
	AcceptedAt  time.Time       `json:"accepted_at,omitzero"`
}

type callJSON struct {
	ID     string `json:"id,omitempty"`
	Parent string `json:"parent,omitempty"`
	Root   string `json:"root,omitempty"`
	Depth  int    `json:"depth,omitempty"`
}

func isHeaderKey(k string) bool {
	switch k {
	case "session", "seq", "id", "from", "audience", "type", "causation", "client_msg_id", "call", "traceparent", "accepted_at":
		return true
	}
	return false
}

// MarshalJSON implements json.Marshaler with the flat form above.
func (e Envelope) MarshalJSON() ([]byte, error) {
	h := envelopeHeader{Session: e.Session, Seq: e.Seq, ID: e.ID, From: e.From, Type: string(e.Type),
		Causation: e.Causation, ClientMsgID: e.ClientMsgID, TraceParent: e.TraceParent, AcceptedAt: e.AcceptedAt}
	if e.Audience.Restricted {
		names := e.Audience.Names
		if names == nil {
			names = []string{}
		}
		h.Audience, _ = json.Marshal(names)
	}
	if e.Call != (Call{}) {
		h.Call = &callJSON{e.Call.ID, e.Call.Parent, e.Call.Root, e.Call.Depth}
	}
	head, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	if e.Payload == nil {
		return head, nil
	}
	body, err := json.Marshal(e.Payload)
	if err != nil {
		return nil, err
	}
	if len(body) <= 2 { // "{}"
		return head, nil
	}
	// Splice the payload's fields into the header object.
	out := append(head[:len(head)-1], ',')
	return append(out, body[1:]...), nil
}

// UnmarshalJSON implements json.Unmarshaler. It is strict: a field that
// belongs neither to the header nor to the payload of the envelope's type is
// an ErrMalformed error naming it, context values are made canonical, and
// times are in UTC, as [DecodeEnvelope] gives them.
func (e *Envelope) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return fmt.Errorf("envelope: %v: %w", err, ErrMalformed)
	}
	head, body := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if isHeaderKey(k) {
			head[k] = fields[k]
		} else {
			body[k] = fields[k]
		}
	}
	var h envelopeHeader
	hb, _ := json.Marshal(head)
	if err := strictUnmarshal(hb, &h); err != nil {
		return fmt.Errorf("envelope: %v: %w", err, ErrMalformed)
	}
	t, err := ParseEventType(h.Type)
	if err != nil {
		return err
	}
	// UTC: for an offset matching the process's zone time.Parse picks
	// time.Local, which would make the result depend on where it runs.
	*e = Envelope{Session: h.Session, Seq: h.Seq, ID: h.ID, From: h.From, Type: t, Causation: h.Causation,
		ClientMsgID: h.ClientMsgID, TraceParent: h.TraceParent, AcceptedAt: h.AcceptedAt.UTC()}
	if h.Call != nil {
		e.Call = Call{h.Call.ID, h.Call.Parent, h.Call.Root, h.Call.Depth}
	}
	if len(h.Audience) > 0 && !bytes.Equal(h.Audience, []byte("null")) {
		var names []string
		if err := json.Unmarshal(h.Audience, &names); err != nil {
			return fmt.Errorf("envelope: audience must be a list of names: %w", ErrMalformed)
		}
		e.Audience = Audience{Restricted: true, Names: names}
	}
	if e.Payload, err = decodePayloadJSON(t, body); err != nil {
		return err
	}
	if err := checkTime("accepted_at", e.AcceptedAt); err != nil {
		return err
	}
	if v, ok := e.Payload.(Violation); ok {
		return checkTime("since", v.Since)
	}
	return nil
}

// checkTime refuses a time the stored form cannot hold: it keeps Unix
// nanoseconds, 0 meaning none, so a time must be after the Unix epoch and
// before 2262 (or zero).
func checkTime(field string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	if !t.After(time.Unix(0, 0)) || !t.Before(time.Unix(0, math.MaxInt64)) {
		return fmt.Errorf("%s %v is outside 1970 to 2262: %w", field, t, ErrMalformed)
	}
	return nil
}

func decodePayloadJSON(t EventType, body map[string]json.RawMessage) (Payload, error) {
	zero := PayloadFor(t)
	if zero == nil {
		if len(body) > 0 {
			return nil, fmt.Errorf("%s carries no data, got field %s: %w", t, strings.Join(slices.Sorted(maps.Keys(body)), ", "), ErrMalformed)
		}
		return nil, nil
	}
	if len(body) == 0 {
		if _, ok := zero.(Custom); ok {
			return nil, nil
		}
	}
	raw, _ := json.Marshal(body)
	p, err := unmarshalPayload(zero, raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %w", t, err, ErrMalformed)
	}
	return p, nil
}

func unmarshalPayload(zero Payload, raw []byte) (Payload, error) {
	switch zero.(type) {
	case Text:
		return decodeAs[Text](raw)
	case Packet:
		p, err := decodeAs[Packet](raw)
		if err != nil {
			return nil, err
		}
		p.Context, err = p.Context.Canonical()
		return p, err
	case ContextUpdate:
		u, err := decodeAs[ContextUpdate](raw)
		if err != nil {
			return nil, err
		}
		return u.Canonical()
	case Invite:
		return decodeAs[Invite](raw)
	case Ended:
		return decodeAs[Ended](raw)
	case Violation:
		v, err := decodeAs[Violation](raw)
		v.Since = v.Since.UTC()
		return v, err
	case Question:
		return decodeAs[Question](raw)
	case Answer:
		return decodeAs[Answer](raw)
	case DelegationResult:
		return decodeAs[DelegationResult](raw)
	case TaskProgress:
		return decodeAs[TaskProgress](raw)
	}
	return decodeAs[Custom](raw)
}

func decodeAs[P Payload](raw []byte) (P, error) {
	var p P
	err := strictUnmarshal(raw, &p)
	return p, err
}
