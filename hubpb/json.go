package hubpb

import (
	"bytes"
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// MarshalJSON returns the one JSON form of m: protojson with the proto field
// names, unset fields left out, on one line. protojson varies its spacing
// from build to build on purpose; this form is compacted, so the same
// message always gives the same bytes (maps are sorted, fields in field
// number order), which makes it fit for golden files and diffs. It is what
// grpcurl and the protobuf libraries of other languages read and write.
func MarshalJSON(m proto.Message) ([]byte, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// UnmarshalJSON parses the JSON form of a message into m. It accepts proto
// and lowerCamel field names, numbers or strings for 64-bit integers, and
// refuses unknown fields.
func UnmarshalJSON(b []byte, m proto.Message) error {
	return protojson.Unmarshal(b, m)
}
