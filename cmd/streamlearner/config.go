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

// configFlag is --config FILE: flag values from a JSON object whose keys
// are flag names ("checkpoint-topic" or "checkpoint_topic"), for whichever
// command runs. Precedence: command line, then STREAMLEARNER_* variables,
// then the file, then the defaults.
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
	}
	ctx.AddResolver(r)
	return nil
}

// fileConfig is the resolver of one config file.
type fileConfig struct {
	path   string
	values map[string]any // keys with '-' spelled '_'
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
	f := &fileConfig{values: map[string]any{}}
	for k, v := range raw {
		f.values[strings.ReplaceAll(k, "-", "_")] = jsonValue(v)
	}
	return f, nil
}

// jsonValue turns decoded JSON into what kong's decoders accept: numbers
// as their literal text, lists element by element.
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

func (f *fileConfig) Resolve(_ *kong.Context, _ *kong.Path, flag *kong.Flag) (any, error) {
	for _, env := range flag.Envs {
		if _, set := os.LookupEnv(env); set {
			return nil, nil
		}
	}
	v, ok := f.values[strings.ReplaceAll(flag.Name, "-", "_")]
	if !ok || v == nil {
		return nil, nil
	}
	return v, nil
}

// Validate rejects settings that no command has as a flag.
func (f *fileConfig) Validate(app *kong.Application) error {
	known := map[string]bool{}
	kong.Visit(app.Node, func(n kong.Visitable, next kong.Next) error {
		if node, ok := n.(*kong.Node); ok {
			for _, fl := range node.Flags {
				known[strings.ReplaceAll(fl.Name, "-", "_")] = true
			}
		}
		return next(nil)
	})
	var unknown []string
	for k := range f.values {
		if !known[k] || k == "config" || k == "help" {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("--config %s: %s: no such flag", f.path, strings.Join(unknown, ", "))
	}
	return nil
}
