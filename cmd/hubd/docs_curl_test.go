package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestOperationsCurl runs the curl commands of docs/OPERATIONS.md's "With
// curl" against `hubd serve` (the live event stream aside): each must be
// answered 200 with JSON, as the text says.
func TestOperationsCurl(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl: the documentation's curl examples are not run")
	}
	doc, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "### With curl")
	blocks := regexp.MustCompile("(?ms)^```sh\n(.*?)^```$").FindStringSubmatch(section)
	if blocks == nil {
		t.Fatal(`docs/OPERATIONS.md has no sh block under "### With curl"`)
	}
	_, httpAddr, stop := serveHTTP(t, "--http", "127.0.0.1:0")
	defer stop()
	env := append(os.Environ(), "ADDR="+httpAddr)
	var id string
	ran := 0
	comment := regexp.MustCompile(`\s{2,}#.*$`)
	for _, line := range strings.Split(strings.ReplaceAll(blocks[1], "\\\n", ""), "\n") {
		line = strings.TrimSpace(comment.ReplaceAllString(line, ""))
		line = strings.ReplaceAll(line, "127.0.0.1:7421", "$ADDR")
		switch {
		case line == "", strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "ID="):
			env = append(env, "ID="+id)
		case regexp.MustCompile(`^[A-Z]+=`).MatchString(line):
			name, _, _ := strings.Cut(line, "=")
			out, err := exec.Command("sh", "-c", line+`; printf %s "$`+name+`"`).Output()
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			env = append(env, name+"="+string(out))
		case strings.HasPrefix(line, "curl -sN"): // the live stream: never ends by itself
		case strings.HasPrefix(line, "curl "):
			cmd := exec.Command("sh", "-c", "curl -w '\\n%{http_code}' --max-time 30 "+strings.TrimPrefix(line, "curl "))
			cmd.Env = env
			out, err := cmd.Output()
			body, code, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
			if err != nil || code != "200" || !json.Valid([]byte(body)) {
				t.Fatalf("%s: %v, HTTP %s:\n%s", line, err, code, body)
			}
			var open struct {
				Session struct {
					Meta struct {
						SessionID string `json:"session_id"`
					}
				}
			}
			if json.Unmarshal([]byte(body), &open) == nil && open.Session.Meta.SessionID != "" && id == "" {
				id = open.Session.Meta.SessionID
			}
			ran++
		default:
			t.Fatalf("a line the test cannot run: %q", line)
		}
	}
	if ran < 5 || id == "" {
		t.Errorf("ran %d curl commands (session %q): the block changed?", ran, id)
	}
}
