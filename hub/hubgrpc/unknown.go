package hubgrpc

import "google.golang.org/protobuf/reflect/protoreflect"

// discardUnknown drops the fields of m, and of every message in it, that
// this hub's schema does not know (a newer client's, or forged ones). They
// were never validated, so they must not reach the log: a later version of
// the hub would read them from it as if it had checked them. The codec
// calls it on a request its second decoder took; the first one drops them
// as it decodes (the JSON API's decoder keeps none).
func discardUnknown(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i, l := 0, v.List(); i < l.Len(); i++ {
				discardUnknown(l.Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				discardUnknown(mv.Message())
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			discardUnknown(v.Message())
		}
		return true
	})
	if len(m.GetUnknown()) > 0 {
		m.SetUnknown(nil)
	}
}
