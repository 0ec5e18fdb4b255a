package autolearn

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/internal/golden"
)

// TestWithDefaultsPinned pins what withDefaults makes of a configuration:
// the zero one, each field at values about its bounds, and every field
// wrong at once and then one fewer at a time, which pins which error is
// reported first.
func TestWithDefaultsPinned(t *testing.T) {
	type edit struct {
		name string
		set  func(*Config)
	}
	var edits []edit
	add := func(name string, set func(*Config)) { edits = append(edits, edit{name, set}) }
	for _, v := range [][]string{nil, {}, {"rbp"}, {"auto"}, {"rbp", "nope"}, {"perceptron", "sop"}} {
		add(fmt.Sprintf("learners=%q", v), func(c *Config) { c.Learners = v })
	}
	for _, v := range [][]string{nil, {"rbf"}, {"linear", "sigmoid"}} {
		add(fmt.Sprintf("kernels=%q", v), func(c *Config) { c.Kernels = v })
	}
	for _, v := range [][2]float64{{0, 0}, {0, 1}, {0.5, 0}, {-1, 1}, {1, 1}, {2, 1}, {0.1, math.Inf(1)}, {math.NaN(), 1}, {1e-9, 1e9}} {
		add(fmt.Sprintf("gamma=%v..%v", v[0], v[1]), func(c *Config) { c.GammaLo, c.GammaHi = v[0], v[1] })
	}
	for _, v := range [][2]int{{0, 0}, {0, 10}, {5, 0}, {1, 1}, {3, 2}, {1, 1 << 20}, {1, 1<<20 + 1}, {-1, 5}} {
		add(fmt.Sprintf("budget=%v..%v", v[0], v[1]), func(c *Config) { c.BudgetLo, c.BudgetHi = v[0], v[1] })
	}
	for _, v := range [][2]int{{0, 0}, {0, 3}, {1, 64}, {1, 65}, {4, 3}, {-2, 3}} {
		add(fmt.Sprintf("degree=%v..%v", v[0], v[1]), func(c *Config) { c.DegreeLo, c.DegreeHi = v[0], v[1] })
	}
	for _, v := range []string{"", "both", "on", "off", "maybe"} {
		add("scale="+v, func(c *Config) { c.Scale = v })
	}
	for _, v := range []int64{0, 1<<16 - 1, 1 << 16, -5} {
		add(fmt.Sprint("memory=", v), func(c *Config) { c.Memory = v })
	}
	for _, v := range []int{0, 1, 256, 257, -1} {
		add(fmt.Sprint("width=", v), func(c *Config) { c.Width = v })
	}
	for _, v := range []int{0, 1, 48, 49, -1} {
		add(fmt.Sprint("keep=", v), func(c *Config) { c.Keep = v })
	}
	for _, v := range []int{0, 1, 1 << 30, 1<<30 + 1, -1} {
		add(fmt.Sprint("rung=", v), func(c *Config) { c.Rung = v })
	}
	for _, v := range []int{0, 1, 2, 1 << 30, 1<<30 + 1} {
		add(fmt.Sprint("window=", v), func(c *Config) { c.Window = v })
	}
	for _, v := range []float64{0, -0.1, 0.5, 1, math.NaN()} {
		add(fmt.Sprint("margin=", v), func(c *Config) { c.Margin = v })
	}
	for _, v := range []string{"", "none", "adwin", "ddm", "page-hinkley", "cusum"} {
		add("drift="+v, func(c *Config) { c.Drift = v })
	}
	for _, v := range []float64{0, 0.5, 1, 1e9, 2e9, math.NaN(), math.Inf(1)} {
		add(fmt.Sprint("cost=", v), func(c *Config) { c.Cost = v })
	}
	for _, v := range []string{"", "vote", "champion", "both"} {
		add("emit="+v, func(c *Config) { c.Emit = v })
	}
	var out strings.Builder
	outcome := func(name string, c Config) {
		if got, err := c.withDefaults(); err != nil {
			fmt.Fprintf(&out, "%s: %v\n", name, err)
		} else {
			fmt.Fprintf(&out, "%s: %+v\n", name, got)
		}
	}
	for _, e := range edits {
		var c Config
		e.set(&c)
		outcome(e.name, c)
	}
	// Every field wrong, then the first of them right, and so on.
	wrong := []func(*Config){
		func(c *Config) { c.Drift = "cusum" }, func(c *Config) { c.Kernels = []string{"sigmoid"} },
		func(c *Config) { c.Learners = []string{"auto"} }, func(c *Config) { c.GammaLo = -1 },
		func(c *Config) { c.BudgetLo, c.BudgetHi = 3, 2 }, func(c *Config) { c.DegreeHi = 65 },
		func(c *Config) { c.Scale = "maybe" }, func(c *Config) { c.Memory = 5 },
		func(c *Config) { c.Width = 300 }, func(c *Config) { c.Keep = -1 },
		func(c *Config) { c.Rung = -1 }, func(c *Config) { c.Cost = 0.5 },
		func(c *Config) { c.Emit = "both" }, func(c *Config) { c.Margin = 2 },
	}
	for i := range wrong {
		var c Config
		for _, set := range wrong[i:] {
			set(&c)
		}
		outcome(fmt.Sprintf("wrong from %d", i), c)
	}
	golden.Check(t, "withdefaults.golden", []byte(out.String()))
}
