package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// writeFish writes the fish completion script: __hubd_cmd names the
// command on the command line ("hubd" for none), and each word and flag
// is completed when its command is there.
func writeFish(w io.Writer, s *compSpec) {
	fmt.Fprint(w, "# fish completion for hubd, written by hubd completion fish.\n"+
		"# hubd completion fish > ~/.config/fish/completions/hubd.fish\n\n")
	fmt.Fprintf(w, "function __hubd_valued\n    set -l f (string split -m1 = -- $argv[1])[1]\n    contains -- (string replace -r -- '^--?' '' $f) \\\n        %s\nend\n\n",
		wrapWords(bareNames(s.valued), " ", " \\\n        "))
	fmt.Fprintf(w, "function __hubd_group\n    contains -- $argv[1] %s\nend\n\n", strings.Join(sortedKeys(s.groups), " "))
	fmt.Fprint(w, `# __hubd_cmd prints the command the words before the cursor name
# ("sessions list"; "hubd" for none), after "help " when they start with it.
function __hubd_cmd
    set -l words (commandline -opc)
    set -e words[1]
    set -l cmd
    set -l help
    set -l skip 0
    for w in $words
        if test $skip = 1
            set skip 0
            continue
        end
        switch $w
            case '-*=*'
            case '-*'
                __hubd_valued $w; and set skip 1
            case '*'
                if test (count $cmd) -eq 0 -a (count $help) -eq 0 -a "$w" = help
                    set help 'help '
                else if test (count $cmd) -eq 0
                    set cmd $w
                else if test (count $cmd) -eq 1; and __hubd_group $cmd[1]
                    set -a cmd $w
                else
                    break
                end
        end
    end
    test (count $cmd) -eq 0; and set cmd hubd
    echo "$help"(string join ' ' $cmd)
end

# __hubd_is CMD...: is the command on the command line one of CMD...
function __hubd_is
    contains -- (__hubd_cmd) $argv
end

`)
	writeFishCompletes(w, s)
}

// writeFishCompletes writes the complete lines: the words after each
// command (and after help), and each command's flags.
func writeFishCompletes(w io.Writer, s *compSpec) {
	for _, word := range s.top {
		fishComplete(w, "hubd", "-f -a "+word, s.about[word])
		fishComplete(w, "help hubd", "-f -a "+word, s.about[word])
	}
	for _, g := range sortedKeys(s.groups) {
		for _, sub := range s.groups[g] {
			fishComplete(w, g, "-f -a "+sub, s.about[g+" "+sub])
			fishComplete(w, "help "+g, "-f -a "+sub, s.about[g+" "+sub])
		}
	}
	for _, c := range sortedKeys(s.choice) {
		fishComplete(w, c, "-f -a '"+strings.Join(s.choice[c], " ")+"'", "")
	}
	for _, c := range sortedKeys(s.flags) {
		cmd := c
		if cmd == "" {
			cmd = "hubd"
		}
		for _, f := range s.flags[c] {
			opt := "-l " + strings.TrimPrefix(f, "--")
			if slices.Contains(s.valued, f) {
				opt += " -r"
			}
			fishComplete(w, cmd, opt, s.about[c+" "+f])
		}
	}
}

// fishComplete writes a complete line for the command cmd ("sessions
// list") with the options opt and a description.
func fishComplete(w io.Writer, cmd, opt, about string) {
	line := fmt.Sprintf("complete -c hubd -n %s %s", fishQuote("__hubd_is "+fishQuote(cmd)), opt)
	if about = firstLine(about); about != "" {
		line += " -d " + fishQuote(about)
	}
	fmt.Fprintln(w, line)
}

// fishQuote quotes s for fish, in single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// firstLine shortens a help text for a description: its first line or
// sentence, without backquotes or the variable's name, at most 80
// characters.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s, _, _ = strings.Cut(s, ". ")
	s = strings.TrimSuffix(strings.ReplaceAll(s, "`", ""), ".")
	if i := strings.Index(s, " [$"+envPrefix); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}
