package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/alecthomas/kong"
)

// configFlag is --config FILE: flag values from a JSON object. The shared
// flags (connection, logging) are top-level keys; a command's own flags
// sit in a section named after the command, nested for subcommands:
//
//	{"brokers": ["kafka:9092"], "log-format": "json",
//	 "run": {"topic": "input", "group": "g"},
//	 "checkpoint": {"list": {"topic": "input"}}}
//
// So a key means one thing: "topic" under "run" is run's input topic and
// nothing else. A section may also set a shared flag for its command
// alone. Keys are flag names, with '-' or '_'. Precedence: command line,
// then STREAMLEARNER_* variables, then the file, then the defaults.
type configFlag string

// BeforeResolve loads the file, so its values are there when kong resolves
// the flags the command line left unset. It is kong.ConfigFlag with the
// file's name in the errors.
func (configFlag) BeforeResolve(k *kong.Kong, ctx *kong.Context, trace *kong.Path) error {
	path := string(ctx.FlagValue(trace.Flag).(configFlag))
	if path == "" {
		return nil
	}
	r, err := k.LoadConfig(path)
	if err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	if f, ok := r.(*fileConfig); ok {
		f.path = path
		f.owners = flagOwners(k.Model.Node)
	}
	ctx.AddResolver(r)
	return nil
}

// fileConfig is the resolver of one config file.
type fileConfig struct {
	path   string
	values map[string]any // keys with '-' spelled '_'; sections are maps
	owners map[*kong.Flag]*kong.Node
}

// loadConfigFile is the kong.ConfigurationLoader behind --config. kong's
// own JSON loader would let the file override the environment (kong
// applies environment variables before resolvers run), so this one yields
// to any flag whose variable is set; and it rejects keys that name no
// flag, so a typo fails at start instead of being ignored.
func loadConfigFile(r io.Reader) (kong.Resolver, error) {
	var raw map[string]any
	dec := json.NewDecoder(r)
	dec.UseNumber() // integers beyond 2^53 (seeds) stay exact
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("want one JSON object of flag values: %w", err)
	}
	return &fileConfig{values: normalize(raw)}, nil
}

func configKey(name string) string { return strings.ReplaceAll(name, "-", "_") }

// normalize spells keys with '_' at every level and turns decoded JSON
// into what kong's decoders accept: numbers as their literal text, lists
// element by element.
func normalize(raw map[string]any) map[string]any {
	out := make(map[string]any, len(raw))
	for k, v := range raw {
		if m, ok := v.(map[string]any); ok {
			out[configKey(k)] = normalize(m)
			continue
		}
		out[configKey(k)] = jsonValue(v)
	}
	return out
}

func jsonValue(v any) any {
	switch v := v.(type) {
	case json.Number:
		return v.String()
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = jsonValue(e)
		}
		return out
	}
	return v
}

// section is the object for the command path, nil if the file has none.
func (f *fileConfig) section(path []string) map[string]any {
	m := f.values
	for _, w := range path {
		next, ok := m[configKey(w)].(map[string]any)
		if !ok {
			return nil
		}
		m = next
	}
	return m
}

func (f *fileConfig) Resolve(_ *kong.Context, _ *kong.Path, flag *kong.Flag) (any, error) {
	for _, env := range flag.Envs {
		if _, set := os.LookupEnv(env); set {
			return nil, nil
		}
	}
	key := configKey(flag.Name)
	owner, ok := f.owners[flag]
	if !ok {
		return nil, nil
	}
	path := commandPath(owner)
	if v, ok := f.section(path)[key]; ok && path != nil {
		return nilIfNull(v), nil
	}
	if isShared(flag.Name) {
		return nilIfNull(f.values[key]), nil
	}
	return nil, nil
}

func nilIfNull(v any) any {
	if _, isSection := v.(map[string]any); isSection {
		return nil
	}
	return v
}

// Validate rejects keys that name no flag where they stand: a command's
// flag at the top level (which command would it be for?), a section for
// no command, a key its command does not have.
func (f *fileConfig) Validate(app *kong.Application) error {
	var problems []string
	var check func(n *kong.Node, m map[string]any, where string)
	check = func(n *kong.Node, m map[string]any, where string) {
		own := map[string]bool{}
		for _, fl := range n.Flags {
			own[configKey(fl.Name)] = true
		}
		subs := map[string]*kong.Node{}
		for _, c := range n.Children {
			subs[configKey(c.Name)] = c
		}
		for _, k := range slices.Sorted(mapKeys(m)) {
			v := m[k]
			if sub, ok := v.(map[string]any); ok {
				if c, ok := subs[k]; ok {
					check(c, sub, where+k+".")
					continue
				}
				problems = append(problems, fmt.Sprintf("%s%s: no such command", where, k))
				continue
			}
			switch {
			case k == "config" || k == "help" || k == "version":
				problems = append(problems, fmt.Sprintf("%s%s: not a setting", where, k))
			case n.Type == kong.ApplicationNode && !isShared(strings.ReplaceAll(k, "_", "-")):
				if cmds := commandsWithFlag(app.Node, k); len(cmds) > 0 {
					problems = append(problems, fmt.Sprintf("%s: a flag of %s, not a shared setting: put it in the command's section, e.g. {%q: {%q: ...}}",
						k, strings.Join(cmds, ", "), strings.Fields(cmds[0])[0], k))
				} else {
					problems = append(problems, k+": no such flag")
				}
			case n.Type != kong.ApplicationNode && !own[k]:
				problems = append(problems, fmt.Sprintf("%s%s: no such flag of %s", where, k, strings.Join(commandPath(n), " ")))
			}
		}
	}
	check(app.Node, f.values, "")
	if len(problems) > 0 {
		return fmt.Errorf("--config %s: %s", f.path, strings.Join(problems, "; "))
	}
	return nil
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// commandsWithFlag lists the commands that have a flag with this key.
func commandsWithFlag(app *kong.Node, key string) []string {
	var out []string
	for fl, n := range flagOwners(app) {
		if configKey(fl.Name) == key && n.Type != kong.ApplicationNode {
			out = append(out, strings.Join(commandPath(n), " "))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
