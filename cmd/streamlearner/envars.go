package main

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/alecthomas/kong"
)

// envPrefix starts every environment variable the commands read.
const envPrefix = "STREAMLEARNER"

// sharedFlags are the flags that mean the same in every command: how to
// reach and authenticate to Kafka, how to log, which config file to read.
// They keep one variable and one config key each (STREAMLEARNER_BROKERS,
// "brokers"); every other flag is the command's own. Built on first use:
// the parser that names them costs 0.3 ms of start-up, and --version asks
// only about --config (see isShared).
var sharedFlags = sync.OnceValue(func() map[string]bool {
	var shared struct {
		connFlags     `embed:""`
		logFlags      `embed:""`
		registryFlags `embed:""`
	}
	k, err := kong.New(&shared)
	if err != nil {
		panic(fmt.Sprintf("shared flags: %v", err))
	}
	names := map[string]bool{"config": true}
	for _, f := range k.Model.Flags {
		if f.Name != "help" {
			names[f.Name] = true
		}
	}
	return names
})

// isShared reports whether the flag name is one of the sharedFlags,
// answering for --config without building them.
func isShared(name string) bool {
	return name == "config" || sharedFlags()[name]
}

// commandPath is the words of a command below the application: ["checkpoint", "list"].
func commandPath(n *kong.Node) []string {
	var path []string
	for ; n != nil && n.Type != kong.ApplicationNode; n = n.Parent {
		path = append(path, n.Name)
	}
	slices.Reverse(path)
	return path
}

// flagOwners maps each flag of the model to the command that declares it.
func flagOwners(app *kong.Node) map[*kong.Flag]*kong.Node {
	owners := map[*kong.Flag]*kong.Node{}
	var walk func(*kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			owners[f] = n
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(app)
	return owners
}

func envName(words ...string) string {
	return strings.ToUpper(strings.ReplaceAll(strings.Join(words, "_"), "-", "_"))
}

// commandEnvars gives every flag without an explicit env tag its
// variable: PREFIX_<FLAG> for the shared flags, PREFIX_<COMMAND>_<FLAG>
// for a command's own (STREAMLEARNER_RUN_TOPIC, STREAMLEARNER_TAIL_TOPIC,
// STREAMLEARNER_CHECKPOINT_LIST_DIR). One name per flag per command, so a
// variable set for one command cannot change what another reads — kong's
// DefaultEnvars would give run's input topic and tail's prediction topic
// the same STREAMLEARNER_TOPIC.
func commandEnvars(prefix string) kong.Option {
	return kong.PostBuild(func(k *kong.Kong) error {
		for f, n := range flagOwners(k.Model.Node) {
			if f.Name == "help" || f.Name == "version" || len(f.Envs) > 0 {
				continue
			}
			words := []string{prefix}
			if !isShared(f.Name) {
				words = append(words, commandPath(n)...)
			}
			name := envName(append(words, f.Name)...)
			f.Envs = []string{name}
			f.Value.Tag.Envs = []string{name}
		}
		return nil
	})
}

// staleEnvWarnings names variables in environ that look meant for the
// selected command but that it does not read: the unprefixed spelling of
// one of its own flags (STREAMLEARNER_TOPIC for tail, which reads
// STREAMLEARNER_TAIL_TOPIC).
func staleEnvWarnings(kctx *kong.Context, environ []string) []string {
	set := map[string]bool{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	var out []string
	for _, f := range kctx.Flags() {
		if f.Name == "help" || f.Name == "version" || len(f.Envs) == 0 || isShared(f.Name) {
			continue
		}
		old := envName(envPrefix, f.Name)
		if set[old] && !slices.Contains(f.Envs, old) {
			out = append(out, fmt.Sprintf("%s is not read; for --%s this command reads %s", old, f.Name, f.Envs[0]))
		}
	}
	slices.Sort(out)
	return out
}

// helpValue is kong's help text for a flag plus what kong leaves out: the
// default of a flag whose placeholder (SPEC, DIR) stands where kong would
// print the default, and the flag's variable.
func helpValue(v *kong.Value) string {
	var notes []string
	if d := shownDefault(v); d != "" {
		notes = append(notes, "default: "+d)
	}
	if len(v.Tag.Envs) > 0 {
		notes = append(notes, "$"+strings.Join(v.Tag.Envs, ", $"))
	}
	if len(notes) == 0 {
		return v.Help
	}
	suffix := "(" + strings.Join(notes, "; ") + ")"
	switch {
	case strings.HasSuffix(v.Help, "."):
		return v.Help[:len(v.Help)-1] + " " + suffix + "."
	case v.Help == "":
		return suffix
	default:
		return v.Help + " " + suffix
	}
}

// shownDefault is the default helpValue must print: empty when there is
// none worth saying (a false switch) or when the flag's placeholder is
// the default itself (--rate=5000).
func shownDefault(v *kong.Value) string {
	if !v.HasDefault || v.Default == "" || v.Flag == nil {
		return ""
	}
	if v.IsBool() && v.Default == "false" {
		return ""
	}
	if _, ok := v.Mapper.(kong.PlaceHolderProvider); !ok && v.Flag.PlaceHolder == "" && !v.IsBool() {
		return "" // kong prints --flag=DEFAULT
	}
	return v.Default
}
