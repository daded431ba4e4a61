package session

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"
)

// The JSON Schema subset a question's schema may use. An answer to a
// free-text question with a schema is its text read as JSON, checked
// against it: type (a name or a list of names: null, boolean, object,
// array, number, integer, string), enum, const, required, properties,
// additionalProperties (false, or a schema), items, minItems, maxItems,
// minimum, maximum, minLength, maxLength, pattern (RE2), and the
// annotations title, description and $schema, which check nothing. Any
// other keyword is refused when the question is asked, so a schema never
// silently checks less than its author meant. schemaKeys lists them.
func schemaKeys() []string {
	return []string{"$schema", "additionalProperties", "const", "description", "enum", "items", "maxItems", "maxLength",
		"maximum", "minItems", "minLength", "minimum", "pattern", "properties", "required", "title", "type"}
}

// CheckSchema reports whether s uses only the supported keywords, each
// with a value of the right kind.
func CheckSchema(s *structpb.Struct) error {
	return checkSchema(s, "$", 0)
}

func checkSchema(s *structpb.Struct, path string, depth int) error {
	if depth > maxValueDepth {
		return fmt.Errorf("%s: schema nested deeper than %d: %w", path, maxValueDepth, ErrMalformed)
	}
	fields := s.GetFields()
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(schemaKeys(), k) {
			return fmt.Errorf("%s: unsupported schema keyword %q (supported: %s): %w", path, k, strings.Join(schemaKeys(), ", "), ErrMalformed)
		}
		if err := checkKeyword(k, fields[k], path, depth); err != nil {
			return err
		}
	}
	return nil
}

func checkKeyword(k string, v *structpb.Value, path string, depth int) error {
	bad := func(want string) error {
		return fmt.Errorf("%s.%s: want %s: %w", path, k, want, ErrMalformed)
	}
	switch k {
	case "type":
		if !validType(v) {
			return bad("a type name or a list of them (null, boolean, object, array, number, integer, string)")
		}
	case "enum":
		if v.GetListValue() == nil {
			return bad("a list")
		}
	case "required":
		for _, x := range v.GetListValue().GetValues() {
			if _, ok := x.GetKind().(*structpb.Value_StringValue); !ok {
				return bad("a list of property names")
			}
		}
	case "properties":
		props := v.GetStructValue()
		if props == nil {
			return bad("an object of schemas")
		}
		for _, name := range slices.Sorted(maps.Keys(props.GetFields())) {
			sub := props.GetFields()[name].GetStructValue()
			if sub == nil {
				return bad("an object of schemas")
			}
			if err := checkSchema(sub, path+".properties."+name, depth+1); err != nil {
				return err
			}
		}
	case "items", "additionalProperties":
		return checkSubschema(k, v, path, depth)
	case "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems":
		if _, ok := v.GetKind().(*structpb.Value_NumberValue); !ok {
			return bad("a number")
		}
	case "pattern":
		if _, err := regexp.Compile(v.GetStringValue()); err != nil || v.GetKind() == nil {
			return bad("a regular expression (RE2)")
		}
	}
	return nil
}

func checkSubschema(k string, v *structpb.Value, path string, depth int) error {
	if sub := v.GetStructValue(); sub != nil {
		return checkSchema(sub, path+"."+k, depth+1)
	}
	if b, ok := v.GetKind().(*structpb.Value_BoolValue); ok && k == "additionalProperties" && !b.BoolValue {
		return nil
	}
	return fmt.Errorf("%s.%s: want a schema: %w", path, k, ErrMalformed)
}

func validType(v *structpb.Value) bool {
	names := []*structpb.Value{v}
	if l := v.GetListValue(); l != nil {
		names = l.GetValues()
	}
	for _, n := range names {
		switch n.GetStringValue() {
		case "null", "boolean", "object", "array", "number", "integer", "string":
		default:
			return false
		}
	}
	return len(names) > 0
}

// MeetsSchema reports whether v meets s (a schema CheckSchema accepts),
// naming the first place it does not, as a JSON path ("$.items[2]: want a
// string").
func MeetsSchema(s *structpb.Struct, v *structpb.Value) error {
	return meets(s, v, "$")
}

func meets(s *structpb.Struct, v *structpb.Value, path string) error {
	f := s.GetFields()
	if t, ok := f["type"]; ok && !hasType(t, v) {
		return fmt.Errorf("%s: want %s, got %s: %w", path, typeWords(t), kindOf(v), ErrMalformed)
	}
	if c, ok := f["const"]; ok && !sameValue(c, v) {
		return fmt.Errorf("%s: want %s: %w", path, jsonOf(c), ErrMalformed)
	}
	if e, ok := f["enum"]; ok && !slices.ContainsFunc(e.GetListValue().GetValues(), func(x *structpb.Value) bool { return sameValue(x, v) }) {
		return fmt.Errorf("%s: want one of %s: %w", path, jsonOf(e), ErrMalformed)
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		return meetsNumber(f, k.NumberValue, path)
	case *structpb.Value_StringValue:
		return meetsString(f, k.StringValue, path)
	case *structpb.Value_ListValue:
		return meetsList(f, k.ListValue.GetValues(), path)
	case *structpb.Value_StructValue:
		return meetsObject(f, k.StructValue.GetFields(), path)
	}
	return nil
}

func meetsNumber(f map[string]*structpb.Value, n float64, path string) error {
	if m, ok := f["minimum"]; ok && n < m.GetNumberValue() {
		return fmt.Errorf("%s: %v is below the minimum %v: %w", path, n, m.GetNumberValue(), ErrMalformed)
	}
	if m, ok := f["maximum"]; ok && n > m.GetNumberValue() {
		return fmt.Errorf("%s: %v is above the maximum %v: %w", path, n, m.GetNumberValue(), ErrMalformed)
	}
	return nil
}

func meetsString(f map[string]*structpb.Value, s, path string) error {
	n := float64(utf8.RuneCountInString(s))
	if m, ok := f["minLength"]; ok && n < m.GetNumberValue() {
		return fmt.Errorf("%s: %d characters, at least %v: %w", path, int(n), m.GetNumberValue(), ErrMalformed)
	}
	if m, ok := f["maxLength"]; ok && n > m.GetNumberValue() {
		return fmt.Errorf("%s: %d characters, at most %v: %w", path, int(n), m.GetNumberValue(), ErrMalformed)
	}
	if p, ok := f["pattern"]; ok {
		re, err := regexp.Compile(p.GetStringValue())
		if err != nil || !re.MatchString(s) {
			return fmt.Errorf("%s: does not match %q: %w", path, p.GetStringValue(), ErrMalformed)
		}
	}
	return nil
}

func meetsList(f map[string]*structpb.Value, items []*structpb.Value, path string) error {
	n := float64(len(items))
	if m, ok := f["minItems"]; ok && n < m.GetNumberValue() {
		return fmt.Errorf("%s: %d items, at least %v: %w", path, len(items), m.GetNumberValue(), ErrMalformed)
	}
	if m, ok := f["maxItems"]; ok && n > m.GetNumberValue() {
		return fmt.Errorf("%s: %d items, at most %v: %w", path, len(items), m.GetNumberValue(), ErrMalformed)
	}
	if sub := f["items"].GetStructValue(); sub != nil {
		for i, x := range items {
			if err := meets(sub, x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func meetsObject(f map[string]*structpb.Value, fields map[string]*structpb.Value, path string) error {
	for _, r := range f["required"].GetListValue().GetValues() {
		if _, ok := fields[r.GetStringValue()]; !ok {
			return fmt.Errorf("%s: missing required property %q: %w", path, r.GetStringValue(), ErrMalformed)
		}
	}
	props := f["properties"].GetStructValue().GetFields()
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		sub, known := props[name]
		switch {
		case known:
			if err := meets(sub.GetStructValue(), fields[name], path+"."+name); err != nil {
				return err
			}
		case f["additionalProperties"].GetStructValue() != nil:
			if err := meets(f["additionalProperties"].GetStructValue(), fields[name], path+"."+name); err != nil {
				return err
			}
		case f["additionalProperties"] != nil:
			return fmt.Errorf("%s: property %q is not allowed (allowed: %s): %w", path, name, strings.Join(slices.Sorted(maps.Keys(props)), ", "), ErrMalformed)
		}
	}
	return nil
}

func hasType(t, v *structpb.Value) bool {
	names := []*structpb.Value{t}
	if l := t.GetListValue(); l != nil {
		names = l.GetValues()
	}
	got := kindOf(v)
	for _, n := range names {
		want := n.GetStringValue()
		if want == got || (want == "number" && got == "integer") {
			return true
		}
	}
	return false
}

func typeWords(t *structpb.Value) string {
	if l := t.GetListValue(); l != nil {
		var names []string
		for _, n := range l.GetValues() {
			names = append(names, n.GetStringValue())
		}
		return "one of " + strings.Join(names, ", ")
	}
	return "a " + t.GetStringValue()
}

// kindOf names a value's JSON Schema type ("integer" for a whole number).
func kindOf(v *structpb.Value) string {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return "null"
	case *structpb.Value_BoolValue:
		return "boolean"
	case *structpb.Value_NumberValue:
		if k.NumberValue == math.Trunc(k.NumberValue) {
			return "integer"
		}
		return "number"
	case *structpb.Value_StringValue:
		return "string"
	case *structpb.Value_ListValue:
		return "array"
	case *structpb.Value_StructValue:
		return "object"
	}
	return "nothing"
}

func sameValue(a, b *structpb.Value) bool {
	x, err1 := ValueJSON(a)
	y, err2 := ValueJSON(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func jsonOf(v *structpb.Value) string {
	b, _ := ValueJSON(v)
	return string(b)
}
