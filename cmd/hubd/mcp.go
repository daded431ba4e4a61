package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hub/hubmcp"
	"github.com/hubd/hubd/internal/a2aconf"
	"github.com/hubd/hubd/internal/buildinfo"
	"github.com/hubd/hubd/internal/exitcode"
)

// runMCP serves the hub to an MCP host over stdio: the host starts
// "hubd mcp --token T" and its model takes part in sessions as the token's
// agent, through the tools of package hubmcp.
func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	info := lookup("mcp")
	fs := newCommand(info.name, info.args, info.summary, stdout)
	var c clientFlags
	c.register(fs)
	c.as, fs.Lookup("as").DefValue = "", "" // an MCP host says who it is
	workflows := fs.String("workflows", "", "a `directory` of transition graphs (NAME.json): open_session takes \"workflow\": NAME")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return exitcode.Usage("mcp: unexpected argument %q (see hubd mcp --help)", fs.Arg(0))
	}
	wf, err := loadWorkflows(*workflows)
	if err != nil {
		return exitcode.Usage("mcp: --workflows: %v", err)
	}
	client, err := c.dial(ctx, "mcp")
	if err != nil {
		return err
	}
	defer client.Close()
	s := hubmcp.New(client.Raw(), hubmcp.Options{Version: buildinfo.Read().Version, Workflows: wf})
	err = s.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil // the host closed the stream or the process was stopped
	}
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

// nopWriteCloser is a writer the transport may close without closing it.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// loadA2A reads the A2A file ("": none).
func loadA2A(path string) (*a2aconf.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return a2aconf.Parse(f)
}

// loadWorkflows reads the graphs NAME.json of dir ("": none).
func loadWorkflows(dir string) (map[string]*structpb.Struct, error) {
	if dir == "" {
		return nil, nil
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s holds no NAME.json graph", dir)
	}
	out := map[string]*structpb.Struct{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		g := &structpb.Struct{}
		if err := g.UnmarshalJSON(b); err != nil {
			return nil, fmt.Errorf("%s is not a JSON object: %w", p, err)
		}
		out[strings.TrimSuffix(filepath.Base(p), ".json")] = g
	}
	return out, nil
}
