package main

import (
	"flag"
	"os"
	"strings"

	"github.com/hubd/hubd/internal/exitcode"
)

// Every flag of serve and every client flag may also be set by an
// environment variable: HUBD_ and the flag's name in capitals, '_' for
// '-' (--max-depth: HUBD_MAX_DEPTH; --tls-ca: HUBD_TLS_CA). A flag on the
// command line wins over its variable, and a variable set to "" counts as
// unset. The help names each flag's variable and never shows a value:
// variables are read after the command line is parsed, not made defaults.

// envPrefix begins the name of every variable of a flag.
const envPrefix = "HUBD_"

// envName is the variable of the flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// envFlags defines flags on fs with define and makes each of them
// settable from its variable: its help names the variable. It returns
// their names, for fromEnv.
func envFlags(fs *flag.FlagSet, define func(*flag.FlagSet)) []string {
	before := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { before[f.Name] = true })
	define(fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if !before[f.Name] {
			f.Usage += " [$" + envName(f.Name) + "]"
			names = append(names, f.Name)
		}
	})
	return names
}

// fromEnv sets each flag of names the command line did not set from its
// variable, when that is set and not empty. A value the flag refuses is
// a mistake on the command line (exit 2); the message names the
// variable, not its value (it may be a secret).
func fromEnv(fs *flag.FlagSet, names []string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, name := range names {
		v := os.Getenv(envName(name))
		if given[name] || v == "" {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return exitcode.Usage("%s: $%s (--%s): %v (see hubd %s --help)", fs.Name(), envName(name), name, err, fs.Name())
		}
	}
	return nil
}
