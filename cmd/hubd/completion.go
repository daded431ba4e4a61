package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/hubd/hubd/internal/exitcode"
)

// completionHelp is the text of hubd completion --help after its line.
const completionHelp = `Print a completion script for the shell: hubd's commands, subcommands and flags.
  bash: source <(hubd completion bash), or save it as /etc/bash_completion.d/hubd
  zsh:  source <(hubd completion zsh) after compinit, or save it as _hubd in a directory of $fpath
  fish: hubd completion fish > ~/.config/fish/completions/hubd.fish`

// runCompletion is "hubd completion bash|zsh|fish": a script built from
// the command table (help.go) and each command's own flags, so it lists
// what the binary has.
func runCompletion(ctx context.Context, args []string, stdout io.Writer) error {
	c := lookup("completion")
	fs := newCommand(c.name, c.args, completionHelp, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return exitcode.Usage("completion: want one of bash, zsh, fish (see hubd completion --help)")
	}
	writers := map[string]func(io.Writer, *compSpec){"bash": writeBash, "zsh": writeZsh, "fish": writeFish}
	write, ok := writers[fs.Arg(0)]
	if !ok {
		return exitcode.Usage("completion: unknown shell %q: want bash, zsh or fish", fs.Arg(0))
	}
	spec, err := completionSpec(ctx)
	if err != nil {
		return err
	}
	write(stdout, spec)
	return nil
}

// compSpec is what a completion script completes.
type compSpec struct {
	top    []string            // the first words: commands and groups
	groups map[string][]string // a group's commands
	flags  map[string][]string // a command's flags ("--state"); "" and "serve": serve's
	choice map[string][]string // a command's fixed arguments (completion: bash zsh fish)
	valued []string            // the flags that take a value, in any command
	about  map[string]string   // a word's or a flag's line of help ("sessions list", "sessions list --state")
}

// completionSpec gathers the commands of the help table, each command's
// flags (from its own --help, as run parses them) and their help.
func completionSpec(ctx context.Context) (*compSpec, error) {
	s := &compSpec{groups: map[string][]string{}, flags: map[string][]string{}, choice: map[string][]string{}, about: map[string]string{}}
	valued := map[string]bool{}
	for _, c := range commands {
		path := strings.Fields(strings.Trim(c.name, "[]"))
		name := strings.Join(path, " ")
		if !slices.Contains(s.top, path[0]) {
			s.top = append(s.top, path[0])
		}
		if len(path) == 2 {
			s.groups[path[0]] = append(s.groups[path[0]], path[1])
			s.about[path[0]] = groups[path[0]]
		}
		s.about[name] = c.summary
		if strings.Contains(c.args, "|") && !strings.ContainsAny(c.args, " []") {
			s.choice[name] = strings.Split(c.args, "|")
		}
		fs, err := commandFlags(ctx, path)
		if err != nil {
			return nil, err
		}
		fs.VisitAll(func(f *flag.Flag) {
			s.flags[name] = append(s.flags[name], "--"+f.Name)
			s.about[name+" --"+f.Name] = f.Usage
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
				valued["--"+f.Name] = true
			}
		})
	}
	s.flags[""] = s.flags["serve"] // hubd --listen ... is hubd serve --listen ...
	s.valued = slices.Sorted(maps.Keys(valued))
	return s, nil
}

// commandFlags returns the flags of the command path ("sessions",
// "list"): its --help is run, which parses its flags as a run would, and
// returns them; a command without flags of its own (help) has none.
func commandFlags(ctx context.Context, path []string) (*flag.FlagSet, error) {
	err := run(ctx, append(slices.Clone(path), "--help"), nil, io.Discard, io.Discard)
	var h *helpShown
	switch {
	case errors.As(err, &h):
		return h.fs, nil
	case err == nil:
		return flag.NewFlagSet(strings.Join(path, " "), flag.ContinueOnError), nil
	}
	return nil, fmt.Errorf("completion: %s --help: %w", strings.Join(path, " "), err)
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// writeShFunctions writes the functions the bash and zsh scripts share
// (both shells read this syntax): _hubd_valued FLAG (does the flag take
// a value), _hubd_group WORD, _hubd_command WORD... (sets cmd to the
// command the words name and help to 1 after "help"), _hubd_words CMD
// HELP (the words that may come next) and _hubd_flags CMD.
func writeShFunctions(w io.Writer, s *compSpec) {
	fmt.Fprintf(w, "_hubd_valued() {\n\tlocal f=${1%%%%=*}\n\tf=${f#-}\n\tcase ${f#-} in\n\t%s) return 0 ;;\n\tesac\n\treturn 1\n}\n\n",
		wrapWords(bareNames(s.valued), "|", " |\\\n\t"))
	fmt.Fprintf(w, "_hubd_group() {\n\tcase $1 in\n\t%s) return 0 ;;\n\tesac\n\treturn 1\n}\n\n", strings.Join(sortedKeys(s.groups), "|"))
	fmt.Fprint(w, `_hubd_command() {
	local w skip=0
	cmd="" help=0
	for w in "$@"; do
		if (( skip )); then
			skip=0
			continue
		fi
		case $w in
		-*=*) ;;
		-*) _hubd_valued "$w" && skip=1 ;;
		*)
			if [[ -z $cmd && $help == 0 && $w == help ]]; then
				help=1
			elif [[ -z $cmd ]]; then
				cmd=$w
			elif [[ $cmd != *" "* ]] && _hubd_group "$cmd"; then
				cmd="$cmd $w"
			else
				break
			fi ;;
		esac
	done
}

`)
	fmt.Fprintf(w, "_hubd_words() {\n\tcase $1 in\n\t'') echo %s ;;\n", strings.Join(s.top, " "))
	for _, g := range sortedKeys(s.groups) {
		fmt.Fprintf(w, "\t%s) echo %s ;;\n", g, strings.Join(s.groups[g], " "))
	}
	for _, c := range sortedKeys(s.choice) {
		fmt.Fprintf(w, "\t%s) (( $2 )) || echo %s ;;\n", c, strings.Join(s.choice[c], " "))
	}
	fmt.Fprint(w, "\tesac\n}\n\n_hubd_flags() {\n\tcase $1 in\n")
	for _, c := range sortedKeys(s.flags) {
		if len(s.flags[c]) > 0 {
			fmt.Fprintf(w, "\t'%s') echo %s ;;\n", c, strings.Join(s.flags[c], " "))
		}
	}
	fmt.Fprint(w, "\tesac\n}\n\n")
}

// bareNames returns the flags without their dashes.
func bareNames(flags []string) []string {
	out := make([]string, len(flags))
	for i, f := range flags {
		out[i] = strings.TrimLeft(f, "-")
	}
	return out
}

// wrapWords joins words with sep, breaking the line with brk after about
// 80 characters.
func wrapWords(words []string, sep, brk string) string {
	var b strings.Builder
	n := 0
	for i, word := range words {
		if i > 0 && n+len(sep)+len(word) > 80 {
			b.WriteString(brk)
			n = 0
		} else if i > 0 {
			b.WriteString(sep)
			n += len(sep)
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

// writeBash writes the bash completion script.
func writeBash(w io.Writer, s *compSpec) {
	fmt.Fprint(w, "# bash completion for hubd, written by hubd completion bash.\n"+
		"# source <(hubd completion bash), or save it as /etc/bash_completion.d/hubd\n\n")
	writeShFunctions(w, s)
	fmt.Fprint(w, `_hubd() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev cmd help line IFS=$' \t\n'
	# The words before the cursor's, from the line: COMP_WORDS splits
	# 127.0.0.1:7420 at the colon.
	read -ra line <<< "${COMP_LINE:0:COMP_POINT}"
	if [[ ${COMP_LINE:COMP_POINT-1:1} != [[:space:]] ]]; then
		unset 'line[${#line[@]}-1]'
	fi
	prev=${line[${#line[@]}-1]}
	_hubd_command "${line[@]:1}"
	COMPREPLY=()
	if (( ! help )) && [[ $prev == -* && $prev != *=* ]] && _hubd_valued "$prev"; then
		return # the flag's value: file names (complete -o default)
	fi
	if (( ! help )) && [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_hubd_flags "$cmd")" -- "$cur"))
	else
		COMPREPLY=($(compgen -W "$(_hubd_words "$cmd" "$help")" -- "$cur"))
	fi
}

complete -o default -F _hubd hubd
`)
}

// writeZsh writes the zsh completion script.
func writeZsh(w io.Writer, s *compSpec) {
	fmt.Fprint(w, "#compdef hubd\n# zsh completion for hubd, written by hubd completion zsh.\n"+
		"# source <(hubd completion zsh) after compinit, or save it as _hubd in a directory of $fpath\n\n")
	writeShFunctions(w, s)
	fmt.Fprint(w, `_hubd() {
	local cur=${words[CURRENT]} prev=${words[CURRENT-1]} cmd help
	local -a ws
	_hubd_command "${(@)words[2,CURRENT-1]}"
	if (( ! help )) && [[ $prev == -* && $prev != *=* ]] && _hubd_valued "$prev"; then
		_files
		return
	fi
	if (( ! help )) && [[ $cur == -* ]]; then
		ws=( $(_hubd_flags "$cmd") )
	else
		ws=( $(_hubd_words "$cmd" "$help") )
	fi
	if (( ${#ws} )); then
		compadd -a ws
	else
		_files
	fi
}

if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then
	_hubd "$@"
else
	compdef _hubd hubd
fi
`)
}
