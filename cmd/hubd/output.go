package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hubpb"
)

// The formats of --output. The first a command lists is its default: a
// table or text for people; json is for programs.
const (
	formatTable = "table" // aligned columns (listings)
	formatText  = "text"  // lines in words (one session, a timeline, an acknowledgement)
	formatJSON  = "json"  // the one JSON form of hub.proto
)

// outputFlag is a command's --output FORMAT, with --json as its short
// form (--output json).
type outputFlag struct {
	format  string
	formats []string // the first is the default
}

// outputFlags registers --output (usage says what each format prints)
// and --json on fs; formats are the values --output takes, the default
// first.
func outputFlags(fs *flag.FlagSet, usage string, formats ...string) *outputFlag {
	o := &outputFlag{format: formats[0], formats: formats}
	fs.Var(o, "output", usage)
	fs.Var(jsonFlag{o}, "json", "the same as --output json")
	return o
}

func (o *outputFlag) String() string {
	if o == nil {
		return ""
	}
	return o.format
}

// Set takes a format, in any case.
func (o *outputFlag) Set(v string) error {
	v = strings.ToLower(v)
	if !slices.Contains(o.formats, v) {
		return fmt.Errorf("want %s", strings.Join(o.formats, " or "))
	}
	o.format = v
	return nil
}

// json reports whether the command prints JSON.
func (o *outputFlag) json() bool { return o.format == formatJSON }

// jsonFlag is --json: --output json (and --json=false the default).
type jsonFlag struct{ o *outputFlag }

func (j jsonFlag) IsBoolFlag() bool { return true }

func (j jsonFlag) String() string { return "" }

func (j jsonFlag) Set(v string) error {
	on, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	if !on {
		j.o.format = j.o.formats[0]
		return nil
	}
	return j.o.Set(formatJSON)
}

// writeJSON writes m in the one JSON form (hubpb.MarshalJSON) on a line:
// a listing prints one message per line (JSON lines).
func writeJSON(w io.Writer, m proto.Message) error {
	b, err := hubpb.MarshalJSON(m)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// writeIndented writes m in the one JSON form, indented: a command that
// prints one message (sessions show, sessions tree) prints it so.
func writeIndented(w io.Writer, m proto.Message) error {
	b, err := hubpb.MarshalJSON(m)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

// timeCell is a time as a table prints it: UTC, to the second
// ("2026-01-02T15:04:05Z"); "-" for none.
func timeCell(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return "-"
	}
	return ts.AsTime().UTC().Truncate(time.Second).Format(time.RFC3339)
}

// ageCell is how long ago ts was, in its largest whole unit: 3s, 4m, 2h,
// 5d; "-" for none.
func ageCell(ts *timestamppb.Timestamp, now time.Time) string {
	if ts == nil {
		return "-"
	}
	return age(now.Sub(ts.AsTime()))
}

// age is a duration in its largest whole unit (a clock behind the hub's
// gives 0s).
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(d, 0)/time.Second)
	case d < time.Hour:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return fmt.Sprintf("%dd", d/(24*time.Hour))
}

// cell is a table cell: s, or "-" for an empty s, so that every row has
// every column (awk '{print $4}' reads the same column on each).
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
