package main

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// completionScript returns hubd completion SHELL's output.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	code, out, errs := runCmd(t, "", "completion", shell)
	if code != 0 || errs != "" || out == "" {
		t.Fatalf("completion %s: exit %d, %q", shell, code, errs)
	}
	return out
}

// TestCompletionCoversCommands checks that each script names every
// command of the help table and every flag of each command.
func TestCompletionCoversCommands(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		script := completionScript(t, shell)
		for _, c := range commands {
			path := strings.Fields(strings.Trim(c.name, "[]"))
			for _, word := range path {
				if !strings.Contains(script, " "+word) {
					t.Errorf("%s: the script lacks the command word %q", shell, word)
				}
			}
			fs, err := commandFlags(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			fs.VisitAll(func(f *flag.Flag) {
				if !strings.Contains(script, "--"+f.Name) && !strings.Contains(script, "-l "+f.Name) {
					t.Errorf("%s: the script lacks %s's flag --%s", shell, c.name, f.Name)
				}
			})
		}
	}
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		if code, _, errs := runCmd(t, "", args...); code != 2 || !strings.Contains(errs, "bash") {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
}

// shellScript writes the completion script of shell to a file, or skips
// the test when the shell is not installed.
func shellScript(t *testing.T, shell string) (bin, file string) {
	t.Helper()
	bin, err := exec.LookPath(shell)
	if err != nil {
		t.Skipf("%s is not installed (apt-get install %s)", shell, shell)
	}
	file = filepath.Join(t.TempDir(), "hubd."+shell)
	if err := os.WriteFile(file, []byte(completionScript(t, shell)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-n", file).CombinedOutput(); err != nil {
		t.Fatalf("%s -n refuses the script: %v\n%s", shell, err, out)
	}
	return bin, file
}

// completes runs a shell program and checks each line it prints against
// the want lines ("command line -> completions").
func completes(t *testing.T, bin string, program string, want []string) {
	t.Helper()
	out, err := exec.Command(bin, "-c", program).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, out)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s completes:\n%s\nwant:\n%s", bin, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// completionCases are command lines (the cursor at the end) and what the
// shells complete there; "FILES" is the shell's own file names.
var completionCases = [][2]string{
	{"hubd ", "serve sessions questions tasks log cluster graph mcp health completion version help"},
	{"hubd se", "serve sessions"},
	{"hubd sessions o", "open"},
	{"hubd --hub 127.0.0.1:7420 tasks ", "cancel"},
	{"hubd sessions open --gr", "--graph"},
	{"hubd sessions list --hub x --st", "--state"},
	{"hubd --max-d", "--max-delta-bytes-per-turn --max-deltas-per-second --max-depth"},
	{"hubd completion ", "bash fish zsh"},
	{"hubd help sessions c", "close"},
	{"hubd sessions open --graph ", "FILES"},
}

// TestCompletionBash sources the bash script and calls its function as
// bash does, with COMP_WORDS, COMP_CWORD, COMP_LINE and COMP_POINT set.
func TestCompletionBash(t *testing.T) {
	bin, file := shellScript(t, "bash")
	prog := []string{"source " + file, `t() {
	COMP_LINE=$1 COMP_POINT=${#1}
	local IFS=$' \t\n:'
	read -ra COMP_WORDS <<< "$1"
	[[ $1 == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	_hubd
	if (( ${#COMPREPLY[@]} )); then
		printf '%s\n' "${COMPREPLY[@]}" | sort | xargs echo
	else
		echo FILES # complete -o default: file names
	fi
}`}
	var want []string
	for _, c := range completionCases {
		prog = append(prog, "t '"+c[0]+"'")
		want = append(want, sortWords(c[1]))
	}
	completes(t, bin, strings.Join(prog, "\n"), want)
}

// TestCompletionZsh sources the zsh script with compadd, _files and
// compdef stubbed (they need an interactive completion) and calls _hubd
// with words and CURRENT set; compadd's own filtering by the prefix is
// done by the stub.
func TestCompletionZsh(t *testing.T) {
	bin, file := shellScript(t, "zsh")
	prog := []string{`compdef() { :; }
compadd() { print -r -- ${(o)${(M)${(@P)2}:#${PREFIX}*}}; }
_files() { print -r -- FILES; }`, "source " + file, `t() {
	words=(${(z)1})
	[[ $1 == *" " ]] && words+=("")
	CURRENT=${#words} PREFIX=${words[-1]}
	_hubd
}`}
	var want []string
	for _, c := range completionCases {
		prog = append(prog, "t '"+c[0]+"'")
		want = append(want, sortWords(c[1]))
	}
	completes(t, bin, strings.Join(prog, "\n"), want)
}

// TestCompletionFish sources the fish script and asks fish what it
// completes (complete -C).
func TestCompletionFish(t *testing.T) {
	bin, file := shellScript(t, "fish")
	prog := []string{"source " + file}
	var want []string
	for _, c := range completionCases {
		if c[1] == "FILES" {
			continue // fish lists the directory's files
		}
		prog = append(prog, "complete -C '"+c[0]+"' | string replace -r '\\t.*' '' | sort | string join ' '")
		want = append(want, sortWords(c[1]))
	}
	completes(t, bin, strings.Join(append(prog, "true"), "\n"), want) // string join of one word fails
}

// sortWords sorts the words of s.
func sortWords(s string) string {
	f := strings.Fields(s)
	slices.Sort(f)
	return strings.Join(f, " ")
}
