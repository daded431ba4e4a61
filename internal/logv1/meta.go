package logv1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// metaV1 is version 1's stored metadata: a JSON object with exactly these
// fields (unknown ones are an error).
type metaV1 struct {
	ID            string                     `json:"id"`
	Type          string                     `json:"type"`
	Creator       string                     `json:"creator"`
	Participants  []participantV1            `json:"participants"`
	Knobs         map[string]json.RawMessage `json:"knobs"`
	Labels        map[string]string          `json:"labels"`
	TTL           int64                      `json:"ttl"`            // nanoseconds
	InviteTimeout int64                      `json:"invite_timeout"` // nanoseconds
	Expectations  []expectationV1            `json:"expectations"`
	Parent        string                     `json:"parent"`
	Root          string                     `json:"root"`
	Depth         int64                      `json:"depth"`
	CreatedAt     time.Time                  `json:"created_at"`
	OpenKey       string                     `json:"open_key"`
}

type participantV1 struct {
	Name       string `json:"name"`
	Role       string `json:"role"`
	AutoAccept bool   `json:"auto_accept"`
}

type expectationV1 struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	Action  string  `json:"action"`
}

// DecodeMeta decodes version 1's stored session metadata: one JSON object
// of the fields id, type ("kind@version"; a bare kind is version 1),
// creator, participants ({name, role, auto_accept}), knobs (JSON values),
// labels, ttl and invite_timeout (integer nanoseconds), expectations
// ({name, seconds, action}), parent, root, depth, created_at (RFC 3339)
// and open_key. An unknown field, trailing data, a bad id or type or a
// number out of range is an error wrapping session.ErrCorrupt.
func DecodeMeta(b []byte) (*hubpb.SessionMeta, error) {
	var v metaV1
	if err := strictUnmarshal(b, &v); err != nil {
		return nil, corrupt("%v", err)
	}
	m := &hubpb.SessionMeta{Creator: v.Creator, Labels: v.Labels, OpenKey: v.OpenKey,
		Ttl: duration(v.TTL), InviteTimeout: duration(v.InviteTimeout)}
	var err error
	if m.SessionId, err = idString("id", v.ID); err != nil {
		return nil, err
	}
	if m.ParentSessionId, err = idString("parent", v.Parent); err != nil {
		return nil, err
	}
	if m.RootSessionId, err = idString("root", v.Root); err != nil {
		return nil, err
	}
	if m.Type, err = parseType(v.Type); err != nil {
		return nil, err
	}
	if v.Depth < math.MinInt32 || v.Depth > math.MaxInt32 {
		return nil, corrupt("depth %d out of range", v.Depth)
	}
	m.Depth = int32(v.Depth)
	if !v.CreatedAt.IsZero() {
		m.CreatedAt = timestamppb.New(v.CreatedAt)
	}
	for _, p := range v.Participants {
		m.Participants = append(m.Participants, &hubpb.Participant{Name: p.Name, Role: p.Role, AutoAccept: p.AutoAccept})
	}
	if m.Knobs, err = knobs(v.Knobs); err != nil {
		return nil, err
	}
	if m.Expectations, err = expectations(v.Expectations); err != nil {
		return nil, err
	}
	return m, nil
}

// corrupt is a session.ErrCorrupt error about version-1 metadata.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("version-1 session metadata: "+format+": %w", append(args, session.ErrCorrupt)...)
}

// strictUnmarshal decodes exactly one JSON value into v, refusing unknown
// fields (at every level) and trailing data.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n")) != 0 {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// idString returns the canonical form of a version-1 session id: "" (or
// the zero UUID) is no session, "".
func idString(field, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return "", corrupt("%s %q: %v", field, s, err)
	}
	if u == uuid.Nil {
		return "", nil
	}
	return u.String(), nil
}

// parseType returns "kind@version" for a version-1 session type: a
// non-empty kind without space or '@', and a positive version (1 when
// absent).
func parseType(s string) (string, error) {
	kind, ver, found := strings.Cut(s, "@")
	v := 1
	if found {
		n, err := strconv.Atoi(ver)
		if err != nil || n < 1 {
			return "", corrupt("session type %q: version must be a positive integer", s)
		}
		v = n
	}
	if kind == "" || strings.ContainsAny(kind, " @\t\n") {
		return "", corrupt("session type %q: kind must be a non-empty word", s)
	}
	return kind + "@" + strconv.Itoa(v), nil
}

// duration returns nanoseconds as a Duration, nil for 0.
func duration(ns int64) *durationpb.Duration {
	if ns == 0 {
		return nil
	}
	return durationpb.New(time.Duration(ns))
}

// knobs converts the knobs' JSON values.
func knobs(raw map[string]json.RawMessage) (map[string]*structpb.Value, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	out := make(map[string]*structpb.Value, len(raw))
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v, err := session.JSONValue(raw[k])
		if err != nil {
			return nil, corrupt("knob %q: %v", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// expectations converts seconds to thresholds, rounded to the nanosecond
// as version 1 did.
func expectations(es []expectationV1) ([]*hubpb.Expectation, error) {
	var out []*hubpb.Expectation
	for _, e := range es {
		// Both bounds: converting an out-of-range float to an integer is
		// implementation-defined in Go.
		if math.IsNaN(e.Seconds) || math.Abs(e.Seconds) > float64(math.MaxInt64/int64(time.Second)) {
			return nil, corrupt("expectation %s: seconds %v out of range", e.Name, e.Seconds)
		}
		within := time.Duration(math.Round(e.Seconds * float64(time.Second)))
		out = append(out, &hubpb.Expectation{Name: e.Name, Within: durationpb.New(within), Action: e.Action})
	}
	return out, nil
}
