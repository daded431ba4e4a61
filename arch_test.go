// Package hubd_test holds the architecture tests: the import arrows between
// hubd's packages and the purity of the pure ones, checked as ordinary Go
// tests in the manner of pebble's lint tests.
package hubd_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/hubd/hubd"

// allowed lists, for each hubd package pattern, the hubd packages it may
// import directly. A package matching no pattern fails the test, so a new
// package needs a decision here.
var allowed = []struct {
	pattern string
	may     []string
}{
	{"session", []string{"hubpb"}},
	{"transition", []string{"session", "hubpb"}},
	{"adapters", []string{"session", "transition", "hubpb"}},
	{"adapters/*", []string{"adapters", "session", "transition", "hubpb"}},
	{"wal", nil},
	{"wal/jetstream", nil},
	{"hubpb", nil},
	{"hubpb/hubsvc", []string{"hubpb"}},
	// The write side never imports its feed; the feed reads what the
	// write side publishes (hub's exported types) and nothing below it
	// that the hub does not hand it (no log of its own, no adapter).
	{"hub", []string{"session", "adapters", "transition", "hubpb"}},
	{"hub/feed", []string{"hub", "session", "adapters", "hubpb"}},
	{"hub/hubgrpc", []string{"hub", "hub/feed", "hubpb", "hubpb/hubsvc", "session", "adapters", "transition"}},
	{"hub/hubhttp", []string{"hub", "hub/feed", "hub/huba2a", "hub/hubgrpc", "hub/hubhttp/gateway", "hub/hubmcp", "hubpb", "hubpb/hubsvc",
		"internal/a2aconf", "session"}},
	// The A2A side: outside A2A clients' tasks as sessions, through the
	// hub's gRPC service (as the caller) and its feed (for streams).
	{"hub/huba2a", []string{"hub/feed", "hub/hubgrpc", "hubpb", "hubpb/hubsvc", "internal/a2aconf", "internal/a2apb", "session"}},
	// The MCP side is a client of the gRPC API, like any agent's.
	{"hub/hubmcp", []string{"hubpb", "hubpb/hubsvc"}},
	// The A2A protocol's messages, generated from its specification.
	{"internal/a2apb", nil},
	{"internal/a2aconf", nil},
	// The archive of purged sessions: the hub's Archiver, on files.
	{"internal/archive", []string{"hub", "hubpb", "session"}},
	{"internal/a2abridge", []string{"agentsdk", "hubpb", "internal/a2apb", "internal/a2aconf"}},
	{"hub/hubhttp/gateway", []string{"hubpb", "hubpb/hubsvc"}},
	{"hub/hubhttp/webui", []string{"hub", "hub/feed", "hub/hubgrpc", "hubpb", "session", "transition"}},
	{"hub/hubtest", []string{"internal/server", "hub", "hub/feed"}},
	{"agentsdk", []string{"hubpb", "hubpb/hubsvc"}},
	{"sdk/go", nil}, // agentsdk's tests against a real hub: tests only
	// The laboratory: measures the code and the hub, in a module of its
	// own; nothing in the product imports it.
	{"bench", nil},
	{"bench/*", []string{"*"}},
	// hubload is an ordinary agentsdk client: its engine (load, which the
	// laboratory runs too) reaches the hub through agentsdk alone, never
	// the server's packages; the floors it is measured against live in
	// bench/.
	{"cmd/hubload", []string{"cmd/hubload/load", "internal/exitcode"}},
	{"cmd/hubload/load", []string{"agentsdk", "hubpb", "internal/exitcode", "internal/buildinfo"}},
	{"cmd/*", []string{"*"}},
	{"examples/*", []string{"agentsdk", "hubpb", "hub/hubtest", "examples/internal/*"}},
	{"internal/logv1", []string{"session", "hubpb"}},
	// The cluster in one room: leases, placement, routing and the calls
	// between nodes, over the hub, its gRPC service and the JetStream log.
	// Its NATS bus imports nothing of hubd's, so that the log's own tests
	// run their servers with it (through internal/natstest).
	{"internal/cluster", []string{"hub", "hub/hubgrpc", "hubpb", "hubpb/hubsvc", "session", "wal/jetstream", "internal/cluster/bus"}},
	{"internal/cluster/bus", nil},
	{"internal/natstest", []string{"internal/cluster/bus"}},
	// The server's wiring: the hub, its feed, their gRPC and HTTP sides,
	// the adapters it registers, the log and the cluster.
	{"internal/server", []string{"adapters", "adapters/*", "hub", "hub/feed", "hub/hubgrpc", "hub/hubhttp", "hub/hubhttp/webui",
		"hubpb", "internal/a2abridge", "internal/a2aconf", "internal/buildinfo", "internal/cluster", "internal/metrics", "session", "transition", "wal"}},
	// Metrics read the hub, its feed and the log; they change nothing.
	{"internal/metrics", []string{"hub", "hub/feed", "hub/hubgrpc", "hubpb", "session", "wal"}},
	// Test helpers: a recorded wire conversation and a clock tests move.
	{"internal/wiretest", []string{"hubpb", "hubpb/hubsvc", "transition"}},
	{"internal/fakeclock", nil},
	{"internal/disktest", nil},
	// Leaves every binary shares: its version, its exit codes, its traces.
	{"internal/buildinfo", nil},
	{"internal/exitcode", nil},
	{"internal/telemetry", nil},
}

// pure are the packages that must read no clock, draw no randomness, do no
// I/O, start no goroutine and never iterate a map in an order that matters.
var pure = []string{"session", "transition", "adapters", "adapters/workflow", "adapters/conversation", "adapters/discussion", "adapters/consulting", "internal/logv1"}

// forbiddenInPure are imports a pure package may not have.
var forbiddenInPure = []string{"math/rand", "math/rand/v2", "crypto/rand", "os", "os/exec", "net", "net/http", "io/fs", "sync", "sync/atomic", "unsafe", "syscall",
	"github.com/dgraph-io/badger/v4", "google.golang.org/grpc", "github.com/rs/zerolog"}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func matches(pattern, rel string) bool {
	if pattern == "*" {
		return true
	}
	if p, ok := strings.CutSuffix(pattern, "/*"); ok {
		return strings.HasPrefix(rel, p+"/")
	}
	return pattern == rel
}

func TestImportArrows(t *testing.T) {
	for _, line := range goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...", "./agentsdk/...", "./hubpb/...", "./bench/...") {
		fields := strings.Fields(line)
		rel, ok := strings.CutPrefix(fields[0], module+"/")
		if !ok {
			continue // the root test package
		}
		var rule []string
		found := false
		for _, a := range allowed {
			if matches(a.pattern, rel) {
				rule, found = a.may, true
				break
			}
		}
		if !found {
			t.Errorf("package %s has no import rule in arch_test.go", rel)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if !slices.ContainsFunc(rule, func(p string) bool { return matches(p, dep) }) {
				t.Errorf("%s imports %s; allowed: %v", rel, dep, rule)
			}
		}
	}
}

func TestPureImports(t *testing.T) {
	for _, rel := range pure {
		for _, dep := range goList(t, "-f", "{{join .Imports \"\\n\"}}", "./"+rel) {
			if slices.Contains(forbiddenInPure, dep) {
				t.Errorf("pure package %s imports %s", rel, dep)
			}
		}
		for _, dep := range goList(t, "-deps", "./"+rel) {
			for _, f := range forbiddenInPure {
				if strings.Contains(f, ".") && strings.HasPrefix(dep, f) {
					t.Errorf("pure package %s depends on %s", rel, dep)
				}
			}
		}
	}
}

// forbiddenCalls are functions a pure package may not call.
var forbiddenCalls = map[string][]string{
	"time":                   {"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"},
	"github.com/google/uuid": {"New", "NewRandom", "NewV7", "NewV1", "NewUUID", "NewString", "Must"},
	"google.golang.org/protobuf/types/known/timestamppb": {"Now"},
}

// TestPurity type-checks every pure package and rejects clock reads,
// randomness, go statements and map iteration whose order could matter: a
// range over a map (unless the line says //hubd:orderless and why), and
// maps.Keys / maps.Values / maps.All anywhere but directly inside
// slices.Sorted or slices.SortedFunc.
func TestPurity(t *testing.T) {
	exports := map[string]string{}
	args := []string{"-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}"}
	for _, rel := range pure {
		args = append(args, "./"+rel)
	}
	for _, l := range goList(t, args...) {
		path, file, _ := strings.Cut(l, "=")
		exports[path] = file
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	for _, rel := range pure {
		t.Run(rel, func(t *testing.T) {
			for _, v := range checkPure(t, fset, imp, module+"/"+rel, rel) {
				t.Error(v)
			}
		})
	}
	// The checker itself must catch each kind of violation.
	got := strings.Join(checkPure(t, fset, imp, "example.com/impure", "testdata/impure"), "\n")
	for _, want := range []string{"go statement", "range over a map", "call to time.Now", "maps.Keys outside", "package-level variable"} {
		if !strings.Contains(got, want) {
			t.Errorf("the purity check missed %q in testdata/impure; it reported:\n%s", want, got)
		}
	}
}

// checkPure returns the purity violations of the package in dir.
func checkPure(t *testing.T, fset *token.FileSet, imp types.Importer, path, dir string) []string {
	var bad []string
	report := func(pos token.Pos, format string, args ...any) {
		bad = append(bad, fset.Position(pos).String()+": "+fmt.Sprintf(format, args...))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var syntax []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		syntax = append(syntax, af)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: imp}
	if _, err := conf.Check(path, fset, syntax, info); err != nil {
		t.Fatalf("type-check %s: %v", path, err)
	}
	for _, f := range syntax {
		checkGlobals(f, report)
		orderless := orderlessLines(fset, f)
		sortedArgs := map[ast.Expr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.GoStmt:
				report(x.Pos(), "go statement in a pure package")
			case *ast.RangeStmt:
				if _, isMap := info.TypeOf(x.X).Underlying().(*types.Map); isMap && !orderless[fset.Position(x.Pos()).Line] {
					report(x.Pos(), "range over a map; iterate slices.Sorted(maps.Keys(m)) or mark the line //hubd:orderless with a reason")
				}
			case *ast.CallExpr:
				pkg, name := calleeOf(info, x)
				if pkg == "slices" && strings.HasPrefix(name, "Sorted") && len(x.Args) > 0 {
					sortedArgs[x.Args[0]] = true
				}
				if slices.Contains(forbiddenCalls[pkg], name) {
					report(x.Pos(), "call to %s.%s in a pure package", pkg[strings.LastIndex(pkg, "/")+1:], name)
				}
				if pkg == "maps" && (name == "Keys" || name == "Values" || name == "All") && !sortedArgs[x] {
					report(x.Pos(), "maps.%s outside slices.Sorted: iteration order would leak", name)
				}
			}
			return true
		})
	}
	return bad
}

// checkGlobals reports package-level variables other than error sentinels
// (errors.New or session.NewError) and blank interface assertions.
func checkGlobals(f *ast.File, report func(token.Pos, string, ...any)) {
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if name.Name == "_" {
					continue
				}
				if i < len(vs.Values) && isErrorsNew(vs.Values[i]) {
					continue
				}
				report(name.Pos(), "package-level variable %s: pure packages hold no mutable state", name.Name)
			}
		}
	}
}

func isErrorsNew(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	if fn, ok := call.Fun.(*ast.Ident); ok {
		return fn.Name == "NewError" // package session's own sentinels
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	switch {
	case id.Name == "errors" && sel.Sel.Name == "New", id.Name == "session" && sel.Sel.Name == "NewError":
		return true
	}
	return false
}

func calleeOf(info *types.Info, call *ast.CallExpr) (pkg, name string) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	obj := info.Uses[sel.Sel]
	if fn, ok := obj.(*types.Func); ok && fn.Pkg() != nil {
		if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() == nil {
			return fn.Pkg().Path(), fn.Name()
		}
	}
	return "", ""
}

func orderlessLines(fset *token.FileSet, f *ast.File) map[int]bool {
	lines := map[int]bool{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//hubd:orderless") {
				lines[fset.Position(c.Pos()).Line] = true
			}
		}
	}
	return lines
}
