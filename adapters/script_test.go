package adapters_test

import (
	"fmt"
	"strings"
)

// A script holds cases. A case starts with "=== name"; then sections, each
// opened by a line "-- session --", "-- graph --", "-- input --" or
// "-- want --". Lines starting with "#" are comments (kept on rewrite at the
// top of a case and inside input sections).
type scriptCase struct {
	name     string
	comments []string
	session  string
	graph    string
	input    []string // the envelopes
	inputRaw []string // the section as written, comments included
	want     string
}

func parseScript(text string) ([]*scriptCase, error) {
	var cases []*scriptCase
	var cur *scriptCase
	section := ""
	var buf []string
	flush := func() {
		if cur == nil {
			return
		}
		body := strings.Join(buf, "\n")
		switch section {
		case "session":
			cur.session = strings.TrimSpace(body)
		case "graph":
			cur.graph = strings.TrimSpace(body)
		case "want":
			if body = strings.TrimRight(body, "\n"); body != "" {
				cur.want = body + "\n"
			}
		}
		buf = nil
	}
	for i, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "=== "):
			flush()
			cur = &scriptCase{name: strings.TrimPrefix(line, "=== ")}
			cases = append(cases, cur)
			section = ""
		case strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --"):
			if cur == nil {
				return nil, fmt.Errorf("line %d: section outside a case", i+1)
			}
			flush()
			section = strings.TrimSuffix(strings.TrimPrefix(line, "-- "), " --")
		case section == "" && strings.HasPrefix(line, "#"):
			if cur != nil {
				cur.comments = append(cur.comments, line)
			}
		case section == "input":
			cur.inputRaw = append(cur.inputRaw, line)
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				cur.input = append(cur.input, t)
			}
		case section != "":
			buf = append(buf, line)
		}
	}
	flush()
	return cases, nil
}

func formatScript(cases []*scriptCase) string {
	var b strings.Builder
	for i, c := range cases {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "=== %s\n", c.name)
		for _, l := range c.comments {
			b.WriteString(l + "\n")
		}
		b.WriteString("-- session --\n" + c.session + "\n")
		if c.graph != "" {
			b.WriteString("-- graph --\n" + c.graph + "\n")
		}
		for len(c.inputRaw) > 0 && strings.TrimSpace(c.inputRaw[len(c.inputRaw)-1]) == "" {
			c.inputRaw = c.inputRaw[:len(c.inputRaw)-1]
		}
		if len(c.inputRaw) > 0 {
			b.WriteString("-- input --\n" + strings.Join(c.inputRaw, "\n") + "\n")
		}
		b.WriteString("-- want --\n" + c.want)
	}
	return b.String()
}
