package session

import (
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
)

// maxFieldDepth bounds how deep CheckFields descends; deeper messages are
// refused (a google.protobuf.Value nests a level per list or struct, and
// CheckValue allows 64 of those).
const maxFieldDepth = 200

// CheckFields reports whether every string of m (fields, map keys,
// repeated values and nested messages such as google.protobuf.Value) is
// valid UTF-8 and every floating-point number is finite. The error names
// the first bad field by its path ("envelope.text.text"), in field-number
// order and map keys sorted, so the same input always names the same
// field. Decoders that do not check UTF-8 (vtprotobuf's, which the hub's
// gRPC codec uses so that it can answer with a reason) leave it to this.
func CheckFields(m proto.Message) error {
	if m == nil {
		return nil
	}
	r := m.ProtoReflect()
	if !r.IsValid() {
		return nil
	}
	if fieldsOK(r, 0) {
		return nil
	}
	return checkMessage(r, "", 0)
}

// fieldsOK is the fast pass of CheckFields: whether every field is good.
// It walks the descriptor's fields (no closure per message) and the JSON
// values of google.protobuf.Value directly, the common nested messages.
func fieldsOK(m protoreflect.Message, depth int) bool {
	if depth > maxFieldDepth {
		return false
	}
	switch x := m.Interface().(type) {
	case *structpb.Value:
		return valueFieldsOK(x, depth)
	case *structpb.Struct:
		return structFieldsOK(x, depth)
	case *structpb.ListValue:
		return listFieldsOK(x, depth)
	case *hubpb.OpenRequest:
		return openRequestOK(x, depth)
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsMap():
			ok := true
			v.Map().Range(func(k protoreflect.MapKey, x protoreflect.Value) bool {
				ok = scalarOK(fd.MapKey(), k.Value(), depth) && scalarOK(fd.MapValue(), x, depth)
				return ok
			})
			if !ok {
				return false
			}
		case fd.IsList():
			l := v.List()
			for j := 0; j < l.Len(); j++ {
				if !scalarOK(fd, l.Get(j), depth) {
					return false
				}
			}
		default:
			if !scalarOK(fd, v, depth) {
				return false
			}
		}
	}
	return true
}

// openRequestOK is fieldsOK of an open request (every open and
// delegation carries one, and the gRPC codec and the hub check it each)
// without reflection: its strings, its participants', labels',
// expectations', graph's, knobs' and delegates', its budget's cost.
// TestOpenRequestFieldsOK fails when a field is added to one of these
// messages, and holds this to the reflective walk field by field.
func openRequestOK(r *hubpb.OpenRequest, depth int) bool {
	if !utf8.ValidString(r.GetType()) || !utf8.ValidString(r.GetParentSessionId()) || !utf8.ValidString(r.GetIdempotencyKey()) ||
		!utf8.ValidString(r.GetThreadKey()) || !utf8.ValidString(r.GetTask()) {
		return false
	}
	for _, p := range r.GetParticipants() {
		if !utf8.ValidString(p.GetName()) || !utf8.ValidString(p.GetRole()) {
			return false
		}
	}
	for k, v := range r.GetLabels() { //hubd:orderless all must be good; the slow pass names the first in key order
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return false
		}
	}
	for _, e := range r.GetExpectations().GetItems() {
		if !utf8.ValidString(e.GetName()) || !utf8.ValidString(e.GetAction()) {
			return false
		}
	}
	if g := r.GetGraph(); g != nil && !structFieldsOK(g, depth+1) {
		return false
	}
	for k, v := range r.GetKnobs() { //hubd:orderless all must be good; the slow pass names the first in key order
		if !utf8.ValidString(k) || !valueFieldsOK(v, depth+1) {
			return false
		}
	}
	for _, d := range r.GetDelegates() {
		if !utf8.ValidString(d) {
			return false
		}
	}
	c := r.GetBudget().GetMaxCost()
	return !math.IsNaN(c) && !math.IsInf(c, 0)
}

func scalarOK(fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int) bool {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return utf8.ValidString(v.String())
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		f := v.Float()
		return !math.IsNaN(f) && !math.IsInf(f, 0)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return fieldsOK(v.Message(), depth+1)
	}
	return true
}

func valueFieldsOK(v *structpb.Value, depth int) bool {
	if depth > maxFieldDepth {
		return false
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return utf8.ValidString(k.StringValue)
	case *structpb.Value_NumberValue:
		return !math.IsNaN(k.NumberValue) && !math.IsInf(k.NumberValue, 0)
	case *structpb.Value_StructValue:
		return structFieldsOK(k.StructValue, depth+1)
	case *structpb.Value_ListValue:
		return listFieldsOK(k.ListValue, depth+1)
	}
	return true
}

func structFieldsOK(s *structpb.Struct, depth int) bool {
	for k, v := range s.GetFields() { //hubd:orderless all must be good; the slow pass names the first in key order
		if !utf8.ValidString(k) || !valueFieldsOK(v, depth+1) {
			return false
		}
	}
	return true
}

func listFieldsOK(l *structpb.ListValue, depth int) bool {
	for _, v := range l.GetValues() {
		if !valueFieldsOK(v, depth+1) {
			return false
		}
	}
	return true
}

// checkMessage is the slow pass: it finds the first bad field in a stable
// order and names it.
func checkMessage(m protoreflect.Message, path string, depth int) error {
	if depth > maxFieldDepth {
		return fmt.Errorf("%s: nested deeper than %d messages: %w", orRoot(path), maxFieldDepth, ErrMalformed)
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		v, p := m.Get(fd), join(path, string(fd.Name()))
		switch {
		case fd.IsMap():
			mp := v.Map()
			keys := make([]protoreflect.MapKey, 0, mp.Len())
			mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool { keys = append(keys, k); return true })
			sortKeys(keys)
			for _, k := range keys {
				kp := fmt.Sprintf("%s[%q]", p, k.String())
				if err := checkScalar(fd.MapKey(), k.Value(), p+" key", depth); err != nil {
					return err
				}
				if err := checkScalar(fd.MapValue(), mp.Get(k), kp, depth); err != nil {
					return err
				}
			}
		case fd.IsList():
			l := v.List()
			for j := 0; j < l.Len(); j++ {
				if err := checkScalar(fd, l.Get(j), fmt.Sprintf("%s[%d]", p, j), depth); err != nil {
					return err
				}
			}
		default:
			if err := checkScalar(fd, v, p, depth); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkScalar(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string, depth int) error {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if s := v.String(); !utf8.ValidString(s) {
			return fmt.Errorf("%s is not valid UTF-8 (%s): %w", path, quoteBytes(s), ErrMalformed)
		}
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%s is %v, not a finite number: %w", path, f, ErrMalformed)
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return checkMessage(v.Message(), path, depth+1)
	}
	return nil
}

func sortKeys(keys []protoreflect.MapKey) {
	for i := 1; i < len(keys); i++ { // insertion sort: maps here are small, and this is the error path
		for j := i; j > 0 && keys[j].String() < keys[j-1].String(); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func orRoot(path string) string {
	if path == "" {
		return "message"
	}
	return path
}

// quoteBytes quotes at most the first 32 bytes of s, invalid bytes as \x
// escapes.
func quoteBytes(s string) string {
	if len(s) > 32 {
		return fmt.Sprintf("%+q...", s[:32])
	}
	return fmt.Sprintf("%+q", s)
}

// CheckText reports whether s is valid UTF-8 without control characters
// (tab and newline aside) or bidirectional overrides, for a free text
// that is shown to people as it is: field names it in the error.
func CheckText(field, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8 (%s): %w", field, quoteBytes(s), ErrMalformed)
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r != '\t' && r != '\n' && (unicode.IsControl(r) || isBidiControl(r)) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Errorf("%s has the control character %U at byte %d: %w", field, r, i, ErrMalformed)
	}
	return nil
}

// isBidiControl reports whether r is one of Unicode's bidirectional
// formatting characters (embeddings, overrides, isolates and marks), which
// can make a name or label read as another.
func isBidiControl(r rune) bool {
	switch {
	case r == 0x061C, r == 0x200E, r == 0x200F: // ALM, LRM, RLM
		return true
	case r >= 0x202A && r <= 0x202E: // LRE, RLE, PDF, LRO, RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	}
	return false
}

// nameRuneOK reports whether r may appear in an agent name: a graphic
// character that is not a space, a comma, a format character (zero-width
// characters, bidirectional controls, the byte-order mark) or a control
// character.
func nameRuneOK(r rune) bool {
	if r == ',' || r == utf8.RuneError || unicode.IsSpace(r) || isBidiControl(r) {
		return false
	}
	return unicode.IsGraphic(r) && !unicode.Is(unicode.Cf, r)
}
