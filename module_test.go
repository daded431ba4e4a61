package hubd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// userModule writes a fresh module outside the repository, as a user's
// would be, holding files (name → content) and requiring mods, each
// replaced by its directory in this repository (they are not published
// yet), and runs go mod tidy in it. It returns the module's directory.
func userModule(t *testing.T, files map[string]string, mods ...string) string {
	t.Helper()
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module example.com/user\n\ngo 1.26.0\n"
	for _, m := range mods {
		gomod += "\nrequire " + module + m + " v0.0.0-00010101000000-000000000000\n"
	}
	// A dependency's own replace directives do not apply to its users.
	for _, m := range []string{"", "/agentsdk", "/hubpb"} {
		gomod += "\nreplace " + module + m + " => " + filepath.Join(root, strings.TrimPrefix(m, "/")) + "\n"
	}
	files["go.mod"] = gomod
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goIn(t, dir, "mod", "tidy")
	return dir
}

// goIn runs the go command in dir, outside any workspace, with the module
// graph free to change.
func goIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

// TestHubtestFromUserModule: a user's tests can still start a real hub
// in process with hub/hubtest, from a module of their own that requires
// the server's module beside agentsdk (examples/minimal's test builds a
// client that requires agentsdk alone, and checks its go.sum).
func TestHubtestFromUserModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own (-short)")
	}
	const test = `package user

import (
	"context"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
)

func TestTurn(t *testing.T) {
	ctx := context.Background()
	h, err := hubtest.Start(ctx, hubtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	c, err := agentsdk.Dial(ctx, h.Addr(), agentsdk.Options{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendText(ctx, s.ID(), "hello"); err != nil {
		t.Fatal(err)
	}
}
`
	dir := userModule(t, map[string]string{"user_test.go": test}, "", "/agentsdk")
	goIn(t, dir, "test", "-count=1", ".")
}
