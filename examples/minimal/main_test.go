package main

import (
	"bytes"
	"context"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
)

// TestMinimal runs the program against an in-process hub.
func TestMinimal(t *testing.T) {
	h := hubtest.New(t)
	var out bytes.Buffer
	if err := run(h.Addr(), &out); err != nil {
		t.Fatal(err)
	}
	want := `asker: What is a write-ahead log?
answerer: The record written before the answer.
closed: sequence_complete
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestServesOnlyItsSession: sessions another client opened with an agent
// named answerer (one inviting it, one in which it speaks first) get
// nothing from the program's answerer.
func TestServesOnlyItsSession(t *testing.T) {
	h := hubtest.New(t)
	ctx := context.Background()
	person, err := agentsdk.Dial(ctx, h.Addr(), agentsdk.Options{Name: "person"})
	if err != nil {
		t.Fatal(err)
	}
	defer person.Close()
	invited, err := person.OpenWorkflow(ctx, agentsdk.Sequence("person", "answerer"), "answerer")
	if err != nil {
		t.Fatal(err)
	}
	first, err := person.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.Sequence("answerer", "person"), Participants: agentsdk.AutoAccepted("answerer")})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(h.Addr(), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "closed: sequence_complete\n") {
		t.Errorf("got:\n%s", out.String())
	}
	for _, id := range []string{invited.ID(), first.ID()} {
		log, err := person.ReadLog(ctx, id, 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range log {
			if e.GetFrom() == "answerer" {
				t.Errorf("the program's answerer acted in %s, a session it did not open: %s %s", id, e.GetType(), agentsdk.TextOf(e))
			}
		}
	}
}

// TestImports: the program imports the standard library and agentsdk
// only.
func TestImports(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		first, _, _ := strings.Cut(path, "/")
		if strings.Contains(first, ".") && path != "github.com/hubd/hubd/agentsdk" {
			t.Errorf("main.go imports %s", path)
		}
	}
}

// serverOnly are modules a client of hubd must never inherit: the
// server's store, cluster bus, HTTP gateway, logging and metrics, test
// browser and trace exporters.
var serverOnly = []string{
	"github.com/hubd/hubd ",
	"github.com/dgraph-io/badger",
	"github.com/nats-io/",
	"github.com/chromedp/",
	"github.com/rs/zerolog",
	"github.com/grpc-ecosystem/grpc-gateway",
	"github.com/prometheus/",
	"go.opentelemetry.io/otel/exporters/",
	"go.opentelemetry.io/otel/sdk",
}

// TestBuildsOutsideTheRepository copies main.go into a fresh module outside
// the repository, which requires agentsdk alone (replaced, with hubpb, by
// its directory here until both are tagged), and builds it: the example
// imports nothing a user's module cannot, and the module's go.sum names
// nothing of the server, since agentsdk and hubpb are modules of their own
// that depend on gRPC, protobuf and the OpenTelemetry API only.
func TestBuildsOutsideTheRepository(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("cannot build the copy: no go command in PATH (%v)", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the repository root %s has no go.mod: %v", root, err)
	}
	dir := t.TempDir() // under os.TempDir, outside the repository
	if rel, err := filepath.Rel(root, dir); err == nil && !strings.HasPrefix(rel, "..") {
		t.Fatalf("the temporary directory %s is inside the repository %s", dir, root)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	gomod := "module example.com/minimal\n\ngo 1.26\n\nrequire github.com/hubd/hubd/agentsdk v0.0.0\n\n" +
		"replace github.com/hubd/hubd/agentsdk => " + filepath.Join(root, "agentsdk") + "\n\n" +
		"replace github.com/hubd/hubd/hubpb => " + filepath.Join(root, "hubpb") + "\n"
	for name, data := range map[string][]byte{"main.go": src, "go.mod": []byte(gomod)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(goCmd, "build", "-o", filepath.Join(dir, "minimal"), ".")
	cmd.Dir = dir
	// -mod=mod writes the copy's go.sum from the (warm) module cache.
	cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("go build: %v", err)
		}
		t.Fatalf("go build in a module outside the repository: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "minimal")); err != nil {
		t.Errorf("no binary: %v", err)
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(sum), "\n") {
		for _, m := range serverOnly {
			if strings.HasPrefix(line, m) {
				t.Errorf("a client of agentsdk inherits %q: %s", strings.TrimSpace(m), line)
			}
		}
	}
}
