package main

import (
	"fmt"
	"io"

	"github.com/hubd/hubd/internal/buildinfo"
	"github.com/hubd/hubd/internal/exitcode"
)

// runVersion is "hubd version": the module version, the commit and the Go
// version the binary was built with (package buildinfo: stamped by a
// release build, else as the toolchain recorded them).
func runVersion(args []string, stdout io.Writer) error {
	c := lookup("version")
	fs := newCommand(c.name, c.args, c.summary, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return exitcode.Usage("version: unexpected argument %q", fs.Arg(0))
	}
	_, err := fmt.Fprint(stdout, buildinfo.Read())
	return err
}
