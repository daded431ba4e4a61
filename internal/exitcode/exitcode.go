package exitcode

import (
	"errors"
	"fmt"
	"io"
)

// Error carries a process exit code with its error.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the carried error.
func (e *Error) Unwrap() error { return e.Err }

// New returns err carrying exit code code.
func New(code int, err error) error { return &Error{Code: code, Err: err} }

// The exit codes an Error carries besides 0.
const (
	// CodeFailed is a command that failed or that the hub refused.
	CodeFailed = 1
	// CodeUsage is a mistake on the command line or in its input.
	CodeUsage = 2
	// CodeUnreachable is a hub that could not be reached, or that went
	// away during the call: the same command may work later.
	CodeUnreachable = 3
)

// Usage is an error of the command line or of its input: exit code 2.
func Usage(format string, args ...any) error {
	return &Error{Code: CodeUsage, Err: fmt.Errorf(format, args...)}
}

// Unreachable is err, an error of reaching the hub: exit code 3.
func Unreachable(err error) error { return &Error{Code: CodeUnreachable, Err: err} }

// Report prints err to stderr as "prog: err" and returns the exit code it
// carries: 0 for nil or an error carrying 0 (such as --help, not printed),
// its code for an Error, 1 for any other error.
func Report(prog string, err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) && e.Code == 0 {
		return 0
	}
	fmt.Fprintln(stderr, prog+":", err)
	if e != nil {
		return e.Code
	}
	return CodeFailed
}
