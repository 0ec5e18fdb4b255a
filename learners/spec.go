package learners

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Spec is a parsed "name:key=value,key=value" string, the form in which
// users name learners (rbp:budget=100) and kernels (rbf:gamma=0.01).
type Spec struct {
	Name   string
	Params map[string]string
}

// ParseSpec splits a spec string into its name and parameters. Keys must be
// unique; values must not be empty.
func ParseSpec(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	name, rest, hasParams := strings.Cut(s, ":")
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return Spec{}, fmt.Errorf("spec %q: missing name", s)
	}
	sp := Spec{Name: name, Params: map[string]string{}}
	if !hasParams {
		return sp, nil
	}
	for _, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return Spec{}, fmt.Errorf("spec %q: %q is not key=value", s, kv)
		}
		if _, dup := sp.Params[k]; dup {
			return Spec{}, fmt.Errorf("spec %q: %s given twice", s, k)
		}
		sp.Params[k] = v
	}
	return sp, nil
}

// String formats the spec canonically: parameters sorted by key.
func (s Spec) String() string {
	if len(s.Params) == 0 {
		return s.Name
	}
	keys := make([]string, 0, len(s.Params))
	for k := range s.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(s.Name)
	for i, k := range keys {
		if i == 0 {
			b.WriteByte(':')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(s.Params[k])
	}
	return b.String()
}

// params reads typed values out of a Spec, remembering the first error and
// which keys were used so that a misspelt key is reported, not ignored.
type params struct {
	spec  Spec
	used  map[string]bool
	canon map[string]string // every value read, formatted canonically
	err   error
}

func newParams(s Spec) *params {
	return &params{spec: s, used: map[string]bool{}, canon: map[string]string{}}
}

// canonical returns the spec with every parameter that was read, defaults
// included, so that two spellings of the same learner compare equal.
func (p *params) canonical() Spec { return Spec{Name: p.spec.Name, Params: p.canon} }

func (p *params) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("%s: "+format, append([]any{p.spec.Name}, args...)...)
	}
}

func (p *params) has(key string) bool {
	_, ok := p.spec.Params[key]
	return ok
}

// float reads key as a finite float in [lo, hi] (hi may be +Inf).
func (p *params) float(key string, def, lo, hi float64) float64 {
	p.used[key] = true
	s, ok := p.spec.Params[key]
	if !ok {
		p.canon[key] = fmtFloat(def)
		return def
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		p.fail("%s=%q is not a finite number", key, s)
		return def
	}
	if v < lo || v > hi {
		p.fail("%s=%s is out of range [%g, %g]", key, s, lo, hi)
		return def
	}
	p.canon[key] = fmtFloat(v)
	return v
}

// int reads key as an integer in [lo, hi].
func (p *params) int(key string, def, lo, hi int) int {
	p.used[key] = true
	s, ok := p.spec.Params[key]
	if !ok {
		p.canon[key] = strconv.Itoa(def)
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		p.fail("%s=%q is not an integer", key, s)
		return def
	}
	if v < lo || v > hi {
		p.fail("%s=%d is out of range [%d, %d]", key, v, lo, hi)
		return def
	}
	p.canon[key] = strconv.Itoa(v)
	return v
}

func (p *params) uint64(key string, def uint64) uint64 {
	p.used[key] = true
	s, ok := p.spec.Params[key]
	if !ok {
		p.canon[key] = strconv.FormatUint(def, 10)
		return def
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		p.fail("%s=%q is not a non-negative integer", key, s)
		return def
	}
	p.canon[key] = strconv.FormatUint(v, 10)
	return v
}

func (p *params) bool(key string, def bool) bool {
	p.used[key] = true
	s, ok := p.spec.Params[key]
	if !ok {
		p.canon[key] = strconv.FormatBool(def)
		return def
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		p.fail("%s=%q is not true or false", key, s)
		return def
	}
	p.canon[key] = strconv.FormatBool(v)
	return v
}

// done reports the first error, or a key that no reader asked for.
func (p *params) done() error {
	if p.err != nil {
		return p.err
	}
	var unknown []string
	for k := range p.spec.Params {
		if !p.used[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		known := make([]string, 0, len(p.used))
		for k := range p.used {
			known = append(known, k)
		}
		sort.Strings(known)
		if len(known) == 0 {
			return fmt.Errorf("%s: takes no parameters, got %s", p.spec.Name, strings.Join(unknown, ", "))
		}
		return fmt.Errorf("%s: unknown parameter %s (valid: %s)", p.spec.Name, strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return nil
}

// fmtFloat formats a parameter so that it parses back to the same float.
func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
