// Package exitcode gives hubd's commands one way to say how they end: an
// error may carry the process exit code (2 for a usage error), and Report
// prints an error and turns it into that code.
package exitcode
