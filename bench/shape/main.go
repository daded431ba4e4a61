package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "shape:", err)
		os.Exit(1)
	}
}

func run(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("shape", flag.ContinueOnError)
	dir := fs.String("dir", ".", "the repository's `directory`")
	pkg := fs.String("pkg", "./hub", "the `package` whose files are measured")
	typ := fs.String("type", "Hub", "the `type` whose fields are counted")
	lines := fs.Bool("lines", true, "also print the lines of hand-written Go of every package")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p, err := load(*dir, *pkg)
	if err != nil {
		return err
	}
	edges, files := references(p)
	order := layering(files, edges)
	up := 0
	for e := range edges {
		if slices.Index(order, e.from) > slices.Index(order, e.to) {
			up++
		}
	}
	fmt.Fprintf(w, "%s: %d files, %d references between files (pairs), %d running back up its layering\n",
		p.PkgPath, len(files), len(edges), up)
	if obj := p.Types.Scope().Lookup(*typ); obj != nil {
		if st, ok := obj.Type().Underlying().(*types.Struct); ok {
			fmt.Fprintf(w, "%s.%s: %d fields\n", p.Name, *typ, st.NumFields())
		}
	}
	if *lines {
		return countLines(*dir, w)
	}
	return nil
}

// load loads one package with its syntax and types.
func load(dir, pattern string) (*packages.Package, error) {
	cfg := &packages.Config{Dir: dir, Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
		packages.NeedTypes | packages.NeedTypesInfo}
	ps, err := packages.Load(cfg, pattern)
	if err != nil {
		return nil, err
	}
	if len(ps) != 1 || len(ps[0].Errors) > 0 {
		return nil, fmt.Errorf("loading %s: %v", pattern, ps)
	}
	return ps[0], nil
}

// edge is one file using what another declares.
type edge struct{ from, to string }

// references returns the pairs of the package's files where the first
// uses a declaration of the second (a package-level name, a method or a
// field of one of its types), and the files.
func references(p *packages.Package) (map[edge]bool, []string) {
	fileOf := func(pos token.Pos) string { return filepath.Base(p.Fset.Position(pos).Filename) }
	edges := map[edge]bool{}
	var files []string
	for _, f := range p.Syntax {
		from := fileOf(f.Pos())
		files = append(files, from)
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := p.TypesInfo.Uses[id]
			if obj == nil || obj.Pkg() != p.Types || !declared(p, obj) {
				return true
			}
			if to := fileOf(obj.Pos()); to != from {
				edges[edge{from, to}] = true
			}
			return true
		})
	}
	slices.Sort(files)
	return edges, files
}

// declared reports whether obj is a declaration a file shares with the
// package's other files: package level, a method, or a struct's field.
func declared(p *packages.Package, obj types.Object) bool {
	if obj.Parent() == p.Types.Scope() {
		return true
	}
	switch o := obj.(type) {
	case *types.Func:
		return o.Type().(*types.Signature).Recv() != nil
	case *types.Var:
		return o.IsField()
	}
	return false
}

// layering orders the files so that few references run backwards
// (Eades, Lin and Smyth's greedy heuristic for a feedback arc set):
// files used by none left go first, files using none left go last, else
// the file whose uses most outnumber its users goes first.
func layering(files []string, edges map[edge]bool) []string {
	left := map[string]bool{}
	for _, f := range files {
		left[f] = true
	}
	degree := func(f string, out bool) int {
		d := 0
		for e := range edges { //hubd:orderless a count
			if left[e.from] && left[e.to] && (out && e.from == f || !out && e.to == f) {
				d++
			}
		}
		return d
	}
	var head, tail []string
	for len(left) > 0 {
		for moved := true; moved; {
			moved = false
			for _, f := range files {
				if left[f] && degree(f, true) == 0 {
					tail, moved = append([]string{f}, tail...), true
					delete(left, f)
				}
			}
			for _, f := range files {
				if left[f] && degree(f, false) == 0 {
					head, moved = append(head, f), true
					delete(left, f)
				}
			}
		}
		best, most := "", 0
		for _, f := range files {
			if d := degree(f, true) - degree(f, false); left[f] && (best == "" || d > most) {
				best, most = f, d
			}
		}
		if best != "" {
			head = append(head, best)
			delete(left, best)
		}
	}
	return append(head, tail...)
}

// countLines prints the lines of hand-written Go (not tests, not
// generated code) of every package under dir, most first.
func countLines(dir string, w io.Writer) error {
	count := map[string]int{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if name == "node_modules" || (strings.HasPrefix(name, ".") && path != dir) || name == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "Code generated") && strings.Contains(string(b), "DO NOT EDIT") {
			return nil
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(path))
		count[rel] += strings.Count(string(b), "\n")
		return nil
	})
	if err != nil {
		return err
	}
	pkgs := make([]string, 0, len(count))
	total := 0
	for p, n := range count { //hubd:orderless sorted below
		pkgs = append(pkgs, p)
		total += n
	}
	slices.SortFunc(pkgs, func(a, b string) int { return count[b] - count[a] })
	fmt.Fprintf(w, "hand-written Go: %d lines\n", total)
	for _, p := range pkgs {
		fmt.Fprintf(w, "  %6d  %s\n", count[p], p)
	}
	return nil
}
