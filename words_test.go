package hubd_test

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// processWords are what speaks of the work that made the product instead
// of the product: a numbered issue or round of work, a possessive issue,
// a scratch script under /tmp/b/. A reader outside the team sees none of
// them; a text names what a thing is ("format version 1", "the throughput
// targets in docs/PERFORMANCE.md"), and git keeps the history.
var processWords = regexp.MustCompile(`[Ii]ssue [0-9]+|[Rr]ound [0-9]+|issue[']s|/tmp/b/[a-z]`)

// TestNoProcessWords reads every tracked text file that is not generated
// (code, comments, help text, tests, documents, scripts) and names each
// line that uses a process word.
func TestNoProcessWords(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git work tree (git ls-files: %v): the tracked files are unknown", err)
	}
	checked := 0
	for name := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		if !isText(data) || isGenerated(name, data) {
			continue
		}
		checked++
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			if m := processWords.FindString(sc.Text()); m != "" {
				t.Errorf("%s:%d: %q speaks of the work, not the product: %s", name, n, m, strings.TrimSpace(sc.Text()))
			}
		}
		if err := sc.Err(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if checked == 0 {
		t.Fatal("no tracked text file read")
	}
}

// isText reports whether data looks like text: no NUL byte in its head.
func isText(data []byte) bool {
	return !bytes.Contains(data[:min(len(data), 8000)], []byte{0})
}

// generatedMark is Go's convention for a generated file's header line,
// which the other generators here (protoc's plugins for TypeScript and
// Python) follow too.
var generatedMark = regexp.MustCompile(`(?m)^\W*Code generated .* DO NOT EDIT`)

// isGenerated reports whether the file at name is generated code: its
// text comes from a source that is itself read.
func isGenerated(name string, data []byte) bool {
	if strings.HasSuffix(name, ".pb.go") || strings.HasSuffix(name, ".pb.gw.go") {
		return true
	}
	return generatedMark.Match(data[:min(len(data), 2000)])
}
