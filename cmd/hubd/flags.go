package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/hubd/hubd/internal/exitcode"
)

// newFlags returns the flag set of the command "hubd name"; its --help
// goes to w. The help text is a generic synopsis and the flags; commands
// with positional arguments use newCommand.
func newFlags(name string, w io.Writer) *flag.FlagSet {
	return newCommand(name, "[flags]", "", w)
}

// newCommand returns the flag set of the command "hubd name" whose --help
// (written to w) shows "usage: hubd name args", the summary and the flags.
func newCommand(name, args, summary string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "usage: hubd %s %s\n", name, args)
		if summary != "" {
			fmt.Fprintf(out, "\n%s\n", summary)
		}
		if hasFlags(fs) {
			fmt.Fprint(out, "\nflags (before or after the arguments):\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseFlags parses args, flags before, between or after the positional
// arguments ("show ID --hub ADDR"); a "--" ends the flags. Afterwards
// fs.Args() holds the positional arguments in order. --help prints the
// command's help to its output and returns an error carrying exit code 0;
// a bad flag is an exit-2 error (printed once, by the caller).
func parseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard) // the error is reported by the caller
	pos, err := interleaved(fs, args)
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return exitcode.New(0, &helpShown{fs: fs})
	case err != nil:
		return exitcode.Usage("%s: %v (see hubd %s --help)", fs.Name(), err, fs.Name())
	}
	// Leave the positional arguments in fs.Args(); parsing "--" sets no flag.
	return fs.Parse(append([]string{"--"}, pos...))
}

// helpShown is the end of a command whose --help was printed: it carries
// the command's flags (which completion scripts list).
type helpShown struct{ fs *flag.FlagSet }

func (h *helpShown) Error() string { return flag.ErrHelp.Error() }

// Unwrap returns flag.ErrHelp.
func (h *helpShown) Unwrap() error { return flag.ErrHelp }

// interleaved runs fs.Parse on args again after each positional argument,
// so flags may follow them, and returns the positional arguments.
func interleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// splitNames splits a comma-separated list, dropping blanks.
func splitNames(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
