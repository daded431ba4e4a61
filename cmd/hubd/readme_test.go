package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/hubpb"
)

// readme returns the repository's README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// codeBlocks returns the bodies of the README's fenced blocks of a
// language, in order.
func codeBlocks(doc, lang string) []string {
	re := regexp.MustCompile("(?ms)^```" + lang + "\n(.*?)^```$")
	var out []string
	for _, m := range re.FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestReadmeCommands checks the README's list of commands is the help's,
// word for word, and that its JSON examples are what they say: envelopes
// in the one JSON form, and results of graph simulate.
func TestReadmeCommands(t *testing.T) {
	doc := readme(t)
	_, help, _ := runCmd(t, "", "help")
	_, list, _ := strings.Cut(help, "usage:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	list = regexp.MustCompile(`(?m)^  `).ReplaceAllString(list, "") + "\n"
	blocks := codeBlocks(doc, "text")
	if len(blocks) == 0 || blocks[0] != list {
		t.Errorf("the README's command list is not hubd help's; paste this into its first text block:\n%s", list)
	}
	spans := regexp.MustCompile("`(\\{[^`]*\\})`").FindAllStringSubmatch(doc, -1)
	n := 0
	for _, m := range spans {
		span := m[1]
		switch {
		case strings.HasPrefix(span, `{"from"`), strings.HasPrefix(span, `{"session_id"`):
			if err := hubpb.UnmarshalJSON([]byte(span), &hubpb.Envelope{}); err != nil {
				t.Errorf("README envelope %s: %v", span, err)
			}
			n++
		case strings.HasPrefix(span, `{"seq"`), strings.HasPrefix(span, `{"accepted"`):
			if !json.Valid([]byte(span)) {
				t.Errorf("README result %s is not JSON", span)
			}
			n++
		}
	}
	if n < 6 {
		t.Errorf("found %d JSON examples in the README, want the envelopes and results of the Commands section", n)
	}
}

// runnable reports whether the test runs a README command line (with
// go run already replaced): not one that starts a hub on the fixed port
// (hubd with no command, or serve, or flags only), installs or builds,
// needs grpcurl, or runs the Python or TypeScript example (their SDKs'
// suites run those: sdk/python/tests/test_example.py,
// sdk/typescript/test/example.test.ts). Blank and comment lines are not
// commands.
func runnable(line string) bool {
	cmd, _, _ := strings.Cut(line, "#")
	f := strings.Fields(cmd)
	switch {
	case len(f) == 0:
		return false
	case f[0] == "hubd":
		return len(f) > 1 && f[1] != "serve" && !strings.HasPrefix(f[1], "-")
	case f[0] == "python3", strings.HasPrefix(f[0], "(cd") && len(f) > 1 && f[1] == "sdk/typescript":
		return false
	case f[0] == "grpcurl", f[0] == "go" && len(f) > 1 && (f[1] == "test" || f[1] == "install" || f[1] == "build" || f[1] == "run"):
		return false
	}
	return true
}

func TestRunnable(t *testing.T) {
	for line, want := range map[string]bool{
		"hubd        # the hub": false, "hubd": false, "hubd serve --data x": false, "hubd --listen 0.0.0.0:7420 --tokens t": false,
		"go test ./...": false, "go install ./cmd/hubd": false, "go run ./cmd/other": false, "grpcurl -plaintext x": false,
		"# a comment": false, "   ": false, "python3 examples/python/pipeline.py --hub x": false,
		"(cd sdk/typescript && npm ci && npm run example -- --hub x)": false,
		"hubd sessions list --hub x":                                  true, "id=$(hubd sessions list | awk 'NR == 2 {print $1}')": true, "pipeline --hub x # example": true,
	} {
		if got := runnable(line); got != want {
			t.Errorf("runnable(%q) = %v", line, got)
		}
	}
}

// TestE2EReadme runs the README's shell blocks as written, in order, each
// as one bash script with set -e, against a real hubd standing in for the
// one the README starts on 127.0.0.1:7420 (its address replaces that one,
// and is $HUBD_HUB): `go run ./cmd/hubd` runs the built hubd, `go run
// ./examples/NAME` the built example. Lines that are
// not runnable are left out (and logged).
func TestE2EReadme(t *testing.T) {
	hubdBinary(t)
	d := startDaemon(t, t.TempDir(), "", "--http", "127.0.0.1:0")
	httpAddr := d.httpAddr(t)
	examples := regexp.MustCompile(`go run \./examples/(\w+)`)
	ran := 0
	for i, block := range codeBlocks(readme(t), "sh") {
		var script []string
		for _, line := range strings.Split(block, "\n") {
			line = strings.ReplaceAll(line, "go run ./cmd/hubd", "hubd")
			for _, m := range examples.FindAllStringSubmatch(line, -1) {
				buildBinary(t, "./examples/"+m[1])
			}
			line = examples.ReplaceAllString(line, "$1")
			if !runnable(line) {
				if strings.TrimSpace(line) != "" && !strings.HasPrefix(strings.TrimSpace(line), "#") {
					t.Logf("block %d: not run: %s", i+1, line)
				}
				continue
			}
			line = strings.ReplaceAll(line, "127.0.0.1:7421", httpAddr)
			script = append(script, strings.ReplaceAll(line, "127.0.0.1:7420", d.addr))
		}
		if len(script) == 0 {
			continue
		}
		ran++
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", "set -e\n"+strings.Join(script, "\n"))
		cmd.Dir = "../.."
		// HUBD_HUB: a command without --hub reaches the stand-in too.
		cmd.Env = append(os.Environ(), "PATH="+bins.dir+string(os.PathListSeparator)+os.Getenv("PATH"), "HUBD_HUB="+d.addr)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil || len(out) == 0 {
			t.Errorf("README block %d: %v\n%s\noutput:\n%s", i+1, err, strings.Join(script, "\n"), out)
		}
	}
	if ran < 3 {
		t.Errorf("ran %d README blocks, want at least the example session, the sessions commands and the graph commands", ran)
	}
}

// readmeSection returns the README's text from the heading to the next
// heading of its level.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	doc := readme(t)
	_, after, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("the README has no %q", heading)
	}
	if i := strings.Index(after, "\n## "); i >= 0 {
		after = after[:i]
	}
	return after
}

// TestReadmeTables keeps the README's tables in step with the binary and
// the tree: every flag of hubd serve is in the flag table and nothing else
// is; every example and every document is listed, and nothing that is not.
func TestReadmeTables(t *testing.T) {
	var flags []string
	serveFlagSet(t).VisitAll(func(f *flag.Flag) { flags = append(flags, f.Name) })
	table := readmeSection(t, "## Running the hub")
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`--([a-z0-9-]+)`").FindAllStringSubmatch(table, -1) {
		named[m[1]] = true
	}
	for _, f := range flags {
		if !named[f] {
			t.Errorf("hubd serve --%s is not in the README's flag table", f)
		}
		delete(named, f)
	}
	for f := range named {
		t.Errorf("the README's flag table names --%s, which hubd serve does not have", f)
	}
	inTable := func(section, pattern string) map[string]bool {
		got := map[string]bool{}
		for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(readmeSection(t, section), -1) {
			got[m[1]] = true
		}
		return got
	}
	check := func(what string, listed map[string]bool, want []string) {
		for _, w := range want {
			if !listed[w] {
				t.Errorf("the README does not list %s %s", what, w)
			}
			delete(listed, w)
		}
		for l := range listed {
			t.Errorf("the README lists %s %s, which is not in the tree", what, l)
		}
	}
	var examples, docs []string
	ents, err := os.ReadDir("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() && e.Name() != "internal" {
			examples = append(examples, e.Name())
		}
	}
	check("the example", inTable("## Examples", `\[`+"`"+`([a-z0-9]+)`+"`"+`\]\(examples/`), examples)
	ents, err = os.ReadDir("../../docs")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".md") {
			docs = append(docs, e.Name())
		}
	}
	check("the document", inTable("## Documentation", `\]\(docs/([A-Z]+\.md)\)`), docs)
}

// serveFlagSet returns hubd serve's flags.
func serveFlagSet(t *testing.T) *flag.FlagSet {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var f serveFlags
	f.define(fs)
	return fs
}
