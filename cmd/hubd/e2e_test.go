package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/wiretest"
)

// e2e holds the binaries the end-to-end tests run: hubd, built by TestMain,
// and the others, built by the first test that needs them.
type e2e struct {
	dir  string // where the binaries are
	hubd string // the hubd binary; "" with -short

	mu    sync.Mutex
	built map[string]error
}

// bins is set once by TestMain before any test runs.
var bins e2e

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if testing.Short() {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "hubd-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins = e2e{dir: dir, built: map[string]error{}}
	if err := goBuild(filepath.Join(dir, "hubd"), "./cmd/hubd"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bins.hubd = filepath.Join(dir, "hubd")
	return m.Run()
}

// goBuild builds a main package of the module (a path from its root) to
// out.
func goBuild(out, pkg string, flags ...string) error {
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", out, pkg)...)
	cmd.Dir = "../.."
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// hubdBinary returns the hubd binary, skipping the test with -short.
func hubdBinary(t *testing.T) string {
	t.Helper()
	if bins.hubd == "" {
		t.Skip("end-to-end: builds and runs binaries")
	}
	return bins.hubd
}

// buildBinary builds another main package ("./cmd/hubload",
// "./examples/pipeline", a module's "github.com/nats-io/nats-server/v2")
// once per run and returns its path, named after the package's last
// element (before a major version's).
func buildBinary(t *testing.T, pkg string) string {
	t.Helper()
	hubdBinary(t)
	name := filepath.Base(pkg)
	if len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
		name = filepath.Base(filepath.Dir(pkg))
	}
	out := filepath.Join(bins.dir, name)
	bins.mu.Lock()
	defer bins.mu.Unlock()
	err, done := bins.built[pkg]
	if !done {
		err = goBuild(out, pkg)
		bins.built[pkg] = err
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// daemon is a running hubd process.
type daemon struct {
	t      *testing.T
	data   string
	addr   string
	cmd    *exec.Cmd
	logs   procOutput
	closed chan struct{} // the log stream ended
}

// startDaemon runs the real hubd binary on a free loopback port (or addr,
// when restarting) with data dir data, logging JSON at info unless extra
// says otherwise. It returns once hubd logs that it listens.
func startDaemon(t *testing.T, data, addr string, extra ...string) *daemon {
	t.Helper()
	return startDaemonEnv(t, nil, data, addr, extra...)
}

// startDaemonEnv is startDaemon with the variables env ("NAME=value")
// added to hubd's environment.
func startDaemonEnv(t *testing.T, env []string, data, addr string, extra ...string) *daemon {
	t.Helper()
	bin := hubdBinary(t)
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	d := &daemon{t: t, data: data, closed: make(chan struct{})}
	d.cmd = exec.Command(bin, append([]string{"serve", "--listen", addr, "--data", data, "--log-format", "json"}, extra...)...)
	d.cmd.Env = append(os.Environ(), env...)
	stderr, _ := d.cmd.StderrPipe()
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan string, 1)
	go d.collect(stderr, listening)
	select {
	case d.addr = <-listening:
	case <-d.closed:
		d.cmd.Wait()
		t.Fatalf("hubd did not start:\n%s", d.log())
	}
	t.Cleanup(func() { d.stop(syscall.SIGKILL) })
	return d
}

// collect keeps hubd's log and sends the address of its "hubd listening"
// line on listening.
func (d *daemon) collect(r io.Reader, listening chan<- string) {
	defer close(d.closed)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		d.logs.Write([]byte(sc.Text() + "\n"))
		if addr, err := listenAddr(bufio.NewScanner(strings.NewReader(sc.Text()))); err == nil {
			listening <- addr
		}
	}
}

func (d *daemon) log() string { return d.logs.String() }

// stop signals the process and waits for it and its log.
func (d *daemon) stop(sig syscall.Signal) {
	if d.cmd.ProcessState != nil {
		return
	}
	d.cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { <-d.closed; d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		d.cmd.Process.Kill()
		<-done
		d.t.Errorf("hubd did not stop on %v\n%s", sig, d.log())
	}
}

// hubd runs the hubd binary with args and returns its exit code and
// output.
func hubd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runBinary(t, hubdBinary(t), "", args...)
}

// runBinary runs a binary with stdin and returns its exit code and output.
// A leading argument "ENV=value" is set in its environment instead.
func runBinary(t *testing.T, bin, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var env []string
	for len(args) > 0 && strings.Contains(args[0], "=") && !strings.HasPrefix(args[0], "-") {
		env, args = append(env, args[0]), args[1:]
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	// A killed command's children (hubload --soak runs a hubd) may hold
	// its output open: stop waiting for it soon after.
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

func TestE2EBadInput(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "", "--max-envelope-bytes", "4096")
	agent := func(name string) hubsvc.HubClient { return devClient(t, d.addr, name) }
	wiretest.BadInput(t, agent, anonClient(t, d.addr))
}

// TestE2EResumeAcrossKill subscribes an agent, kills hubd with SIGKILL,
// restarts it on the same data and address, and resumes from the agent's
// cursor: no gap, no duplicate.
func TestE2EResumeAcrossKill(t *testing.T) {
	data := t.TempDir()
	d := startDaemon(t, data, "")
	ctx := context.Background()
	alice := devClient(t, d.addr, "alice")
	id := wiretest.Pipeline(t, alice)
	carol := devClient(t, d.addr, "carol")
	sctx, cancel := context.WithCancel(ctx)
	stream, err := carol.Subscribe(sctx, &hubpb.SubscribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: wiretest.Text("research")}); err != nil {
		t.Fatal(err)
	}
	var got []string
	cursor := uint64(0)
	for cursor < 3 { // invite, opened, alice's text
		dl, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		cursor = dl.GetEnvelope().GetSeq()
		got = append(got, fmt.Sprintf("%d:%s", cursor, dl.GetEnvelope().GetType()))
	}
	cancel()
	bob := devClient(t, d.addr, "bob")
	if _, err := bob.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: wiretest.Text("draft")}); err != nil {
		t.Fatal(err)
	}
	d.stop(syscall.SIGKILL)
	d = startDaemon(t, data, d.addr)
	carol = devClient(t, d.addr, "carol")
	stream, err = carol.Subscribe(ctx, &hubpb.SubscribeRequest{Cursors: map[string]uint64{id: cursor}})
	if err != nil {
		t.Fatal(err)
	}
	dl, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, fmt.Sprintf("%d:%s", dl.GetEnvelope().GetSeq(), dl.GetEnvelope().GetType()))
	if !dl.GetYourTurn() {
		t.Errorf("bob's draft should tell carol it is her turn")
	}
	if r, err := carol.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: wiretest.Text("edited")}); err != nil || !r.GetClosed() {
		t.Fatalf("carol's turn: %v %v", r, err)
	}
	dl, err = stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, fmt.Sprintf("%d:%s", dl.GetEnvelope().GetSeq(), dl.GetEnvelope().GetType()))
	if s := strings.Join(got, " "); s != "1:session_invite 2:session_opened 3:text 4:text 6:session_closed" {
		t.Fatalf("deliveries %s", s)
	}
}

// TestE2ETokensAndShutdown serves with a tokens file: missing and wrong
// tokens are refused, a right one works, over gRPC and from the CLI;
// SIGTERM stops hubd cleanly.
func TestE2ETokensAndShutdown(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("# agents\nalice alice-secret-token-1\nbob bob-secret-token-22\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, t.TempDir(), "", "--tokens", tokens)
	ctx := context.Background()
	for name, c := range map[string]hubsvc.HubClient{
		"missing token": anonClient(t, d.addr),
		"wrong token":   dialWith(t, d.addr, "authorization", "Bearer bob-secret-token-2X"),
		"dev name only": devClient(t, d.addr, "alice"),
	} {
		_, err := c.ListSessions(ctx, &hubpb.ListSessionsRequest{})
		if code, reason := wiretest.ReasonOf(err); reason != "UNAUTHENTICATED" {
			t.Errorf("%s: %v %s", name, code, reason)
		}
	}
	alice := dialWith(t, d.addr, "authorization", "Bearer alice-secret-token-1")
	if _, err := alice.Open(ctx, &hubpb.OpenRequest{Type: "conversation", Participants: []*hubpb.Participant{{Name: "bob"}}}); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := hubd(t, "sessions", "list", "--hub", d.addr, "--token", "bob-secret-token-22"); code != 0 || !strings.Contains(out, "PENDING") {
		t.Errorf("sessions list with bob's token: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := hubd(t, "HUBD_TOKEN=bob-secret-token-22", "sessions", "list", "--hub", d.addr); code != 0 || !strings.Contains(out, "PENDING") {
		t.Errorf("sessions list with $HUBD_TOKEN: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := hubd(t, "HUBD_TOKEN=bob-secret-token-2X", "sessions", "list", "--hub", d.addr, "--token", "bob-secret-token-22"); code != 0 || !strings.Contains(out, "PENDING") {
		t.Errorf("sessions list with --token over a wrong $HUBD_TOKEN: exit %d\n%s%s", code, out, errs)
	}
	if _, out, _ := hubd(t, "HUBD_TOKEN=bob-secret-token-22", "sessions", "list", "--help"); strings.Contains(out, "bob-secret") {
		t.Errorf("--help shows the token of $HUBD_TOKEN:\n%s", out)
	}
	code, _, errs := hubd(t, "sessions", "list", "--hub", d.addr, "--token", "bob-secret-token-2X")
	if want := "hubd: sessions list: unknown token (UNAUTHENTICATED)\n"; code != 1 || errs != want {
		t.Errorf("sessions list with a wrong token: exit %d, stderr %q; want exit 1, %q", code, errs, want)
	}
	d.stop(syscall.SIGTERM)
	if code := d.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(d.log(), "hubd stopped") {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, d.log())
	}
}

// TestE2EExamples runs every example end to end through agentsdk against
// the real hubd binary.
func TestE2EExamples(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	for _, ex := range []struct {
		name, closed string
		args         []string
	}{
		{"pipeline", "closed: sequence_complete", nil},
		{"roundrobin", "closed: max_turns", nil},
		{"triage", "closed: resolved", nil},
		{"feedbackloop", "closed: approved", nil},
		{"supervisor", "closed: resolved", nil},
		{"delegation", "closed: answered", nil},
		{"pausehandoff", "closed: done", []string{"--answer", "Thursday"}},
		{"spawnawait", "closed: answered", nil},
	} {
		t.Run(ex.name, func(t *testing.T) {
			bin := buildBinary(t, "./examples/"+ex.name)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, append([]string{"--hub", d.addr}, ex.args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", ex.name, err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if last := lines[len(lines)-1]; last != ex.closed || len(lines) < 3 {
				t.Fatalf("%s printed:\n%s", ex.name, out)
			}
		})
	}
	// the sessions the examples ran are in the hub, closed
	code, out, errs := hubd(t, "sessions", "list", "--hub", d.addr, "--state", "CLOSED")
	// 16: the 8 examples' sessions and the children they delegated to
	// (delegation 3, pausehandoff 2, spawnawait 3)
	if code != 0 || strings.Count(out, " CLOSED ") != 16 {
		t.Fatalf("sessions list --state CLOSED: exit %d\n%s%s", code, out, errs)
	}
	for _, state := range []string{"OPEN", "PENDING"} {
		if code, out, errs := hubd(t, "sessions", "list", "--hub", d.addr, "--state", state); code != 0 || strings.Count(out, "\n") != 1 {
			t.Errorf("sessions list --state %s: exit %d, want the header only\n%s%s", state, code, out, errs)
		}
	}
}

// TestE2EKillDuringLoad runs hubload --verify against the real hubd, kills
// hubd with SIGKILL in the middle, restarts it on the same data directory,
// and checks with hubload --check that every acknowledged envelope is
// there: "acked N, found N".
func TestE2EKillDuringLoad(t *testing.T) {
	data := t.TempDir()
	d := startDaemon(t, data, "")
	load := buildBinary(t, "./cmd/hubload")
	verify := filepath.Join(t.TempDir(), "acked.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lg, lgOut := startLoad(t, ctx, load, "--hub", d.addr, "--agents", "8", "--sessions", "4", "--duration", "60s",
		"--warmup", "0s", "--verify", verify)
	// Kill hubd once a few hundred sends are acknowledged: poll the file
	// hubload appends to (a real process writing, so no clock to inject).
	deadline := time.Now().Add(30 * time.Second)
	for countLines(verify) < 300 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	d.stop(syscall.SIGKILL)
	lg.Process.Signal(syscall.SIGINT)
	lg.Wait()
	acked := countLines(verify)
	if acked < 300 {
		t.Fatalf("only %d acknowledged sends before the kill\n%s", acked, lgOut.String())
	}
	d = startDaemon(t, data, d.addr)
	out, err := exec.CommandContext(ctx, load, "--hub", d.addr, "--check", verify).CombinedOutput()
	first := strings.SplitN(string(out), "\n", 2)[0]
	if err != nil || first != fmt.Sprintf("acked %d, found %d", acked, acked) {
		t.Fatalf("check after kill -9: %v\n%s", err, out)
	}
	t.Log(first)
}

// startLoad starts the hubload binary load with args in the background
// (stopped with ctx) and returns it with its combined output.
func startLoad(t *testing.T, ctx context.Context, load string, args ...string) (*exec.Cmd, *procOutput) {
	t.Helper()
	lg := exec.CommandContext(ctx, load, args...)
	out := &procOutput{}
	lg.Stdout, lg.Stderr = out, out
	if err := lg.Start(); err != nil {
		t.Fatal(err)
	}
	return lg, out
}

// procOutput is a running process's output, readable while it is written.
type procOutput struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (o *procOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *procOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// stopLoad interrupts a load and returns its output once it has printed
// its report (or after 20s): what a failure shows, its rejections counted
// by reason.
func stopLoad(lg *exec.Cmd, out *procOutput) string {
	lg.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() {
		lg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		lg.Process.Kill()
		<-done
	}
	return out.String()
}

// countLines counts the complete lines of a file (0 if it is missing).
func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}
