package main

import (
	"context"
	"flag"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/internal/server"
)

// DefaultListen is where hubd serves unless told otherwise.
const DefaultListen = "127.0.0.1:7420"

type serveFlags struct {
	listen, data, tokens, tlsCert, tlsKey, clientCA, logFormat, logLevel, operators string
	fsync                                                                           bool
	inviteTimeout                                                                   time.Duration
	maxEnvelope, maxOpen, subscriberBuffer                                          int
}

// register defines serve's flags.
func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "listen", DefaultListen, "gRPC `address` to serve (host:port)")
	fs.StringVar(&f.data, "data", "./hubd-data", "`directory` of the write-ahead log (created if missing)")
	fs.StringVar(&f.tokens, "tokens", "", "tokens `file`: one \"agent token [operator]\" per line; without it only a loopback address is served, in development mode")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "server certificate (PEM `file`)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "server key (PEM `file`)")
	fs.StringVar(&f.clientCA, "client-ca", "", "require client certificates signed by this CA (PEM `file`); a certificate's common name is its agent")
	fs.StringVar(&f.operators, "operators", "", "comma-separated `agents` with operator rights when they authenticate by certificate or in development mode (default operator in development mode)")
	fs.StringVar(&f.logFormat, "log-format", "console", "log `format`: json or console")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `level`: debug (adds every envelope and rejection), info, warn, error")
	fs.BoolVar(&f.fsync, "fsync", true, "fsync the log before acknowledging; false loses acknowledged envelopes on a crash (benchmarks only)")
	fs.DurationVar(&f.inviteTimeout, "invite-timeout", 5*time.Minute, "default time invitees have to acknowledge")
	fs.IntVar(&f.maxEnvelope, "max-envelope-bytes", 1<<20, "largest envelope stored, in bytes")
	fs.IntVar(&f.maxOpen, "max-open-per-agent", 0, "most pending or open sessions an agent may have created (0: no limit)")
	fs.IntVar(&f.subscriberBuffer, "subscriber-buffer", 4096, "deliveries buffered per subscriber before it is cut off")
}

// runServe runs the hub until ctx is done, then shuts it down gracefully.
// It logs to stderr; stdout has only --help.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommand("serve", "[flags]", "Run the hub until interrupted (SIGINT or SIGTERM), then stop gracefully.", stdout)
	var f serveFlags
	f.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return exitcode.Usage("serve: unexpected argument %q", fs.Arg(0))
	}
	lg, err := newLogger(stderr, f.logFormat, f.logLevel)
	if err != nil {
		return err
	}
	cfg, err := f.config(lg)
	if err != nil {
		return err
	}
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case err := <-srv.Done():
		lg.Error().Err(err).Msg("gRPC server stopped")
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

func (f *serveFlags) config(lg zerolog.Logger) (server.Config, error) {
	cfg := server.Config{Listen: f.listen, DataDir: f.data, NoSync: !f.fsync, TLSCert: f.tlsCert, TLSKey: f.tlsKey,
		ClientCA: f.clientCA, Operators: splitNames(f.operators), Logger: lg}
	cfg.Hub.InviteTimeout, cfg.Hub.MaxEnvelopeBytes = f.inviteTimeout, f.maxEnvelope
	cfg.Hub.MaxOpenPerAgent, cfg.Hub.SubscriberBuffer = f.maxOpen, f.subscriberBuffer
	if f.tokens != "" {
		file, err := os.Open(f.tokens)
		if err != nil {
			return cfg, exitcode.Usage("serve: %v", err)
		}
		defer file.Close()
		if cfg.Tokens, err = hubgrpc.ParseTokens(file); err != nil {
			return cfg, exitcode.Usage("serve: %s: %v", f.tokens, err)
		}
	}
	if !f.fsync {
		lg.Warn().Msg("--fsync=false: acknowledged envelopes can be lost on a crash")
	}
	return cfg, nil
}

// newLogger builds the process logger.
func newLogger(w io.Writer, format, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil || level == "" {
		return zerolog.Nop(), exitcode.Usage("--log-level %q: want debug, info, warn or error", level)
	}
	switch format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !isTerminal(w)}
	default:
		return zerolog.Nop(), exitcode.Usage("--log-format %q: want json or console", format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
