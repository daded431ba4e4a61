package hubmcp

import (
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Schema returns the JSON Schema (draft 2020-12) of the JSON form of the
// messages of md, as hubpb.UnmarshalJSON reads it: proto field names,
// 64-bit integers as strings or numbers, enums by name, bytes as base64,
// maps as objects and the well-known types in their JSON forms. Every
// message type it reaches is one entry of $defs, so recursive messages
// are described once.
func Schema(md protoreflect.MessageDescriptor) map[string]any {
	b := schemaBuilder{defs: map[string]any{}}
	root := b.message(md)
	s := map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema"}
	for k, v := range root {
		s[k] = v
	}
	if len(b.defs) > 0 {
		s["$defs"] = b.defs
	}
	return s
}

// schemaBuilder collects the $defs of one schema.
type schemaBuilder struct {
	defs map[string]any
}

// message is the inline schema of md's fields (for the root), entering
// the messages its fields reach into defs.
func (b *schemaBuilder) message(md protoreflect.MessageDescriptor) map[string]any {
	if wk, ok := wellKnown(md); ok {
		return wk
	}
	props := map[string]any{}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		props[string(fd.Name())] = b.field(fd)
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}

// ref is a reference to md's entry in defs, made on first use.
func (b *schemaBuilder) ref(md protoreflect.MessageDescriptor) map[string]any {
	if wk, ok := wellKnown(md); ok {
		return wk
	}
	name := string(md.FullName())
	if _, ok := b.defs[name]; !ok {
		b.defs[name] = true // a placeholder while its fields are built: recursion ends here
		b.defs[name] = b.message(md)
	}
	return map[string]any{"$ref": "#/$defs/" + name}
}

// field is the schema of one field's JSON value.
func (b *schemaBuilder) field(fd protoreflect.FieldDescriptor) map[string]any {
	switch {
	case fd.IsMap():
		return map[string]any{"type": "object", "additionalProperties": b.single(fd.MapValue())}
	case fd.IsList():
		return map[string]any{"type": "array", "items": b.single(fd)}
	}
	return b.single(fd)
}

// single is the schema of one value of fd's kind.
func (b *schemaBuilder) single(fd protoreflect.FieldDescriptor) map[string]any {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return map[string]any{"type": "boolean"}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return map[string]any{"type": "integer"}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return map[string]any{"type": "integer", "minimum": 0}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return map[string]any{"type": []any{"string", "integer"}, "pattern": `^-?[0-9]+$`}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return map[string]any{"type": []any{"string", "integer"}, "pattern": `^[0-9]+$`, "minimum": 0}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return map[string]any{"type": "number"}
	case protoreflect.StringKind:
		return map[string]any{"type": "string"}
	case protoreflect.BytesKind:
		return map[string]any{"type": "string", "contentEncoding": "base64"}
	case protoreflect.EnumKind:
		return enum(fd.Enum())
	}
	return b.ref(fd.Message()) // MessageKind, GroupKind
}

// enum is an enum's schema: its value names (protojson also reads numbers).
func enum(ed protoreflect.EnumDescriptor) map[string]any {
	vals := ed.Values()
	names := make([]any, 0, vals.Len())
	for i := range vals.Len() {
		names = append(names, string(vals.Get(i).Name()))
	}
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "string", "enum": names},
		map[string]any{"type": "integer"},
	}}
}

// wellKnown is the schema of a well-known type's JSON form.
func wellKnown(md protoreflect.MessageDescriptor) (map[string]any, bool) {
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		return map[string]any{"type": "string", "format": "date-time"}, true
	case "google.protobuf.Duration":
		return map[string]any{"type": "string", "pattern": `^-?[0-9]+(\.[0-9]+)?s$`, "description": `a duration in seconds, such as "1.5s"`}, true
	case "google.protobuf.Struct":
		return map[string]any{"type": "object"}, true
	case "google.protobuf.Value":
		return map[string]any{}, true
	case "google.protobuf.ListValue":
		return map[string]any{"type": "array"}, true
	case "google.protobuf.Empty":
		return map[string]any{"type": "object", "additionalProperties": false}, true
	case "google.protobuf.StringValue":
		return map[string]any{"type": "string"}, true
	case "google.protobuf.BoolValue":
		return map[string]any{"type": "boolean"}, true
	case "google.protobuf.Int32Value", "google.protobuf.UInt32Value":
		return map[string]any{"type": "integer"}, true
	case "google.protobuf.Int64Value", "google.protobuf.UInt64Value":
		return map[string]any{"type": []any{"string", "integer"}}, true
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue":
		return map[string]any{"type": "number"}, true
	case "google.protobuf.FieldMask":
		return map[string]any{"type": "string"}, true
	case "google.protobuf.Any":
		return map[string]any{"type": "object", "properties": map[string]any{"@type": map[string]any{"type": "string"}}, "required": []any{"@type"}}, true
	}
	return nil, false
}
