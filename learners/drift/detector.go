package drift

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/streamlearner/streamlearner/learners"
)

// Detector watches a stream of 0/1 errors (true = the learner erred) and says when its rate changed.
type Detector interface {
	// Add observes one labeled round and reports whether a drift is detected at it.
	// After a detection the detector has already reset itself (ADWIN: dropped the old window) and goes on.
	Add(mistake bool) bool
	// Name is a short stable name: "adwin", "ddm", "page-hinkley".
	Name() string
}

// kind is one detector as the spec syntax knows it.
type kind struct {
	name string
	// params lists the spec keys of a zero configuration; build makes the
	// detector once they are set.
	params func() ([]param, func() (Detector, error))
	// canonical formats the default configuration.
	canonical func() string
}

var kinds = []kind{
	{
		name: "adwin",
		params: func() ([]param, func() (Detector, error)) {
			var c ADWINConfig
			return c.params(), func() (Detector, error) { return NewADWIN(c) }
		},
		canonical: func() string { a, _ := NewADWIN(ADWINConfig{}); return a.String() },
	},
	{
		name: "ddm",
		params: func() ([]param, func() (Detector, error)) {
			var c DDMConfig
			return c.params(), func() (Detector, error) { return NewDDM(c) }
		},
		canonical: func() string { d, _ := NewDDM(DDMConfig{}); return d.String() },
	},
	{
		name: "page-hinkley",
		params: func() ([]param, func() (Detector, error)) {
			var c PageHinkleyConfig
			return c.params(), func() (Detector, error) { return NewPageHinkley(c) }
		},
		canonical: func() string { p, _ := NewPageHinkley(PageHinkleyConfig{}); return p.String() },
	},
}

// Names lists the detector names New accepts.
func Names() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.name
	}
	return out
}

// Defaults lists one spec per detector with every parameter at its
// default, in the form String gives.
func Defaults() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.canonical()
	}
	return out
}

// New builds a detector from a spec "name[:key=value,...]", such as
// "adwin:delta=0.002", "ddm" or "page-hinkley:lambda=50,delta=0.005".
// Omitted keys take their defaults.
//
// Keys: adwin — delta, buckets, clock, min-window; ddm — min-instances,
// warning, drift; page-hinkley — delta, lambda, alpha, min-instances.
func New(spec string) (Detector, error) {
	sp, err := learners.ParseSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("detector: %w", err)
	}
	for _, k := range kinds {
		if k.name != sp.Name {
			continue
		}
		ps, build := k.params()
		if err := setParams(sp, ps); err != nil {
			return nil, fmt.Errorf("detector: %w", err)
		}
		d, err := build()
		if err != nil {
			return nil, fmt.Errorf("detector %q: %w", spec, err)
		}
		return d, nil
	}
	return nil, fmt.Errorf("detector %q: unknown name %q (available: %s)", spec, sp.Name, strings.Join(Names(), ", "))
}

// Run feeds mistakes to d in order and returns the positions (indices into
// mistakes) at which it detected a drift.
func Run(d Detector, mistakes []bool) []int64 {
	var out []int64
	for i, m := range mistakes {
		if d.Add(m) {
			out = append(out, int64(i))
		}
	}
	return out
}

// param binds a spec key to one field of a configuration: f for a float,
// i for an integer.
type param struct {
	key string
	f   *float64
	i   *int
}

func (c *ADWINConfig) params() []param {
	return []param{{key: "delta", f: &c.Delta}, {key: "buckets", i: &c.Buckets},
		{key: "clock", i: &c.Clock}, {key: "min-window", i: &c.MinSubWindow}}
}

func (c *DDMConfig) params() []param {
	return []param{{key: "min-instances", i: &c.MinInstances},
		{key: "warning", f: &c.WarningLevel}, {key: "drift", f: &c.DriftLevel}}
}

func (c *PageHinkleyConfig) params() []param {
	return []param{{key: "delta", f: &c.Delta}, {key: "lambda", f: &c.Lambda},
		{key: "alpha", f: &c.Alpha}, {key: "min-instances", i: &c.MinInstances}}
}

// setParams parses the spec's values into ps. Ranges are the config's
// Validate's business; this rejects what is not a number, a key no param
// has, and an explicit 0, which the config would silently read as the
// default.
func setParams(sp learners.Spec, ps []param) error {
	for key, s := range sp.Params {
		var p *param
		for i := range ps {
			if ps[i].key == key {
				p = &ps[i]
			}
		}
		if p == nil {
			return fmt.Errorf("%s: unknown parameter %q (valid: %s)", sp.Name, key, keys(ps))
		}
		zero := false
		if p.f != nil {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%s: %s=%q is not a finite number", sp.Name, key, s)
			}
			*p.f, zero = v, v == 0
		} else {
			v, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("%s: %s=%q is not an integer", sp.Name, key, s)
			}
			*p.i, zero = v, v == 0
		}
		if zero {
			return fmt.Errorf("%s: %s=0 is not allowed (leave the key out for the default)", sp.Name, key)
		}
	}
	return nil
}

func keys(ps []param) string {
	ks := make([]string, len(ps))
	for i, p := range ps {
		ks[i] = p.key
	}
	return strings.Join(ks, ", ")
}

// specOf formats a configuration, defaults filled in, as a canonical spec.
func specOf(name string, ps []param) string {
	sp := learners.Spec{Name: name, Params: map[string]string{}}
	for _, p := range ps {
		if p.f != nil {
			sp.Params[p.key] = strconv.FormatFloat(*p.f, 'g', -1, 64)
		} else {
			sp.Params[p.key] = strconv.Itoa(*p.i)
		}
	}
	return sp.String()
}

// String is the canonical spec of the detector: New(a.String()) builds the
// same detector.
func (a *ADWIN) String() string { c := a.cfg; return specOf(a.Name(), c.params()) }

// String is the canonical spec of the detector.
func (d *DDM) String() string { c := d.cfg; return specOf(d.Name(), c.params()) }

// String is the canonical spec of the detector.
func (p *PageHinkley) String() string { c := p.cfg; return specOf(p.Name(), c.params()) }

// orDefault fills a zero configuration field with its default.
func orDefault[T int | float64](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}

// nonNegative checks a field for which only finite values ≥ 0 mean
// anything (0 being the default).
func nonNegative[T int | float64](detector, key string, v T) error {
	if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return fmt.Errorf("%s: %s=%v is not a finite non-negative number", detector, key, v)
	}
	return nil
}
