package autolearn

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/drift"
)

// Name is the learner spec's name: "auto" or "auto:key=value,…".
const Name = "auto"

// DefaultLearners are the learners searched when the spec names none: the
// budget learners that did best on the project's streams (docs/selection.md),
// the Perceptron and PA-I, capped at the candidate's budget, and LBSOP, the
// second-order learner best on text under shifting targets (docs/auto.md);
// Config.Cost keeps its O(B³) rebuilds on ill-conditioned kernels from
// setting the search's pace.
var DefaultLearners = []string{"rbp", "lbp", "forgetron", "projectron++", "perceptron", "pa1", "lbsop"}

// Config is the search space and what the search may spend. Zero values
// take the documented defaults (see Parse for the spec's keys).
type Config struct {
	// Learners are the learner names searched; default DefaultLearners.
	// Each candidate is the learner at a budget (budget=, or max= for a
	// learner without a budget of its own).
	Learners []string
	// Kernels are the kernel families searched (linear, poly, rbf);
	// default all three. Ignored with FixedKernel.
	Kernels []string
	// GammaLo, GammaHi bound the RBF γ; default 0.001 and 10. The first
	// candidates take γ on a ×10 grid from GammaLo; explorers step by ×3.
	GammaLo, GammaHi float64
	// CLo, CHi bound the aggressiveness C of the learners that have one
	// (PA-I); default 0.001 and 10. The first candidates take C on a ×10
	// grid from CLo; explorers step by ×3. On a9a PA-I on the linear
	// kernel made 16.0 % mistakes at C = 0.01 against 21.0 % at its
	// default C = 1: a small C is a strong regularizer on noisy labels.
	CLo, CHi float64
	// BudgetLo, BudgetHi bound the budget; default 50 and 400. The first
	// candidates take b = min(max(100, BudgetLo), BudgetHi) and
	// min(2b, BudgetHi); explorers step by ×2. An open range (budget=50..,
	// BudgetHi = MaxBudget) lets a full champion's copy at twice its
	// budget grow as far as Memory (the group's share) and Cost allow.
	// Not the default: on 100,000 Covertype events it took LBSOP to 1,600
	// on RBF γ = 0.001, where its explorers, untrained at that budget,
	// never moved γ: 22.47 % mistakes in 11 times the CPU time, against
	// 18.69 % at 400 (the first 10,000 covtype records: 31.40 % against
	// 34.02).
	// A learner that keeps its model in primal form on a linear kernel
	// (the Perceptron and PA-I, learners.Unbounded) has no budget there:
	// it holds d weights, whatever the stream's length.
	BudgetLo, BudgetHi int
	// DegreeLo, DegreeHi bound the polynomial kernel's degree (coef0 = 1,
	// scale = 1); default 1 and 4. Degree 1 is the linear kernel with an
	// intercept, x·y + 1, on which the Perceptron and PA-I are primal.
	// (2..4 before: auto had no linear learner whose boundary misses the
	// origin.)
	DegreeLo, DegreeHi int
	// Scale is "both" (default: candidates with and without online
	// scaling), "on" or "off".
	Scale string
	// FixedKernel searches only the kernel the learner is built with
	// (spec kernel=given; default kernel=search).
	FixedKernel bool
	// Memory bounds the candidates' memory together, in bytes, as
	// learners.EstimateMemory counts it on the records seen; default
	// 64 MiB. The worst candidates are dropped, and explorers not started,
	// to stay under it. The k classes of a many-class model, which all
	// hold the candidates, share min(k, 4) times it (Auto.bound).
	Memory int64
	// Width is the number of candidates the search starts with (they all
	// learn every record until the halving cuts them); default 48. Up to
	// Width candidates in primal form (O(nnz) a round) start beside them
	// (see grid).
	Width int
	// Keep is the number of candidates left once the halving is done: the
	// champion and Keep−1 challengers that explore near it; default 3.
	// After the halving a record costs about Keep learners' rounds.
	Keep int
	// Rung is the labeled records of the first halving rung; each next
	// rung is twice as long; default 200.
	Rung int
	// Window is the labeled records over which a challenger is compared
	// with the champion, after a warm-up of Window/2; default 1000.
	Window int
	// Margin is how much lower a challenger's mistake rate over the
	// window must be to replace the champion; default 0.01.
	Margin float64
	// Cost bounds what a candidate may spend, in learners.Outcome.Work
	// (multiply-adds, counted, so the same on every machine and after a
	// restore): at the end of a halving rung, candidates whose work in
	// the rung exceeds Cost times the rung's median candidate's go before
	// the better half is kept; after the halving, a challenger whose work
	// since its warm-up exceeds Cost times the champion's over the same
	// records loses at once, once Rung labeled records tell. Default 10.
	// It stops a candidate whose cost runs away (a second-order learner
	// rebuilding its inverse, O(B³), on an ill-conditioned kernel) from
	// setting the pace of the whole search.
	Cost float64
	// Drift names the detector that watches the emitted mistakes once the
	// halving is done: "adwin" (default, δ = 0.002), "ddm",
	// "page-hinkley" (each at its defaults, docs/drift.md), or "none".
	// When it sees the rate rise, the search reopens (see the package
	// rules). Without it a shift is met by duels alone, and a challenger
	// needs 1.5·Window records to win one.
	Drift string
	// Emit is what the search emits: "vote" (default), the
	// candidates' vote weighted by their recent mistakes (see the package
	// rules), or "champion", the champion's margin. The vote hedges
	// between candidates where the duels cannot yet tell them apart, and
	// follows a shift within tens of records: on the Reuters shifts it
	// was within 15 % of the best of 40 fixed learners in 52.5 of 60
	// segments (mean over six seeds), the champion in 39.8 (docs/auto.md).
	// In a many-class model each candidate votes for the class of its
	// largest margin (see Vote).
	Emit string
}

// MaxBudget is the largest budget= takes, and the upper end of an open
// range (budget=50..): memory= stops the growth long before it.
const MaxBudget = 1 << 20

// withDefaults is c with its zero fields at their defaults, checked.
func (c Config) withDefaults() (Config, error) {
	if len(c.Learners) == 0 {
		c.Learners = DefaultLearners
	}
	if len(c.Kernels) == 0 {
		c.Kernels = []string{"linear", "poly", "rbf"}
	}
	// A range is defaulted whole: one bound given is a range to check.
	rangeOrDefault(&c.GammaLo, &c.GammaHi, 0.001, 10)
	rangeOrDefault(&c.CLo, &c.CHi, 0.001, 10)
	rangeOrDefault(&c.BudgetLo, &c.BudgetHi, 50, 400)
	rangeOrDefault(&c.DegreeLo, &c.DegreeHi, 1, 4)
	orDefault(&c.Scale, "both")
	orDefault(&c.Memory, 64<<20)
	orDefault(&c.Width, 48)
	orDefault(&c.Keep, 3)
	orDefault(&c.Rung, 200)
	orDefault(&c.Window, 1000)
	orDefault(&c.Margin, 0.01)
	orDefault(&c.Drift, "adwin")
	orDefault(&c.Cost, 10)
	orDefault(&c.Emit, "vote")
	if err := c.checkNames(); err != nil {
		return c, err
	}
	for _, r := range configRules {
		if !r.ok(c) {
			return c, r.err(c)
		}
	}
	return c, nil
}

// orDefault sets *p to def when it is zero.
func orDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// rangeOrDefault sets the range *lo..*hi to def when both bounds are zero.
func rangeOrDefault[T comparable](lo, hi *T, defLo, defHi T) {
	var zero T
	if *lo == zero && *hi == zero {
		*lo, *hi = defLo, defHi
	}
}

// checkNames checks the names c lists: the drift detector, the kernel
// families and the learners, each of which needs a budget to search.
func (c Config) checkNames() error {
	if c.Drift != "none" && !slices.Contains(drift.Names(), c.Drift) {
		return fmt.Errorf("auto: drift=%s: want %s or none", c.Drift, strings.Join(drift.Names(), ", "))
	}
	for _, k := range c.Kernels {
		if k != "linear" && k != "poly" && k != "rbf" {
			return fmt.Errorf("auto: kernel family %q: want linear, poly or rbf", k)
		}
	}
	for _, l := range c.Learners {
		if l == Name {
			return fmt.Errorf("auto: learners: %s cannot search itself", Name)
		}
		if _, err := budgetKey(l); err != nil {
			return err
		}
	}
	return nil
}

// configRules are the bounds of a configuration's numbers and choices,
// in the order they are checked: the first broken one is reported.
var configRules = []struct {
	ok  func(Config) bool
	err func(Config) error
}{
	{func(c Config) bool { return c.GammaLo > 0 && c.GammaLo <= c.GammaHi && !math.IsInf(c.GammaHi, 0) },
		func(c Config) error {
			return fmt.Errorf("auto: gamma=%g..%g: want 0 < lo ≤ hi", c.GammaLo, c.GammaHi)
		}},
	{func(c Config) bool { return c.CLo > 0 && c.CLo <= c.CHi && !math.IsInf(c.CHi, 0) },
		func(c Config) error { return fmt.Errorf("auto: c=%g..%g: want 0 < lo ≤ hi", c.CLo, c.CHi) }},
	{func(c Config) bool { return c.BudgetLo >= 1 && c.BudgetLo <= c.BudgetHi && c.BudgetHi <= MaxBudget },
		func(c Config) error {
			return fmt.Errorf("auto: budget=%d..%d: want 1 ≤ lo ≤ hi ≤ %d", c.BudgetLo, c.BudgetHi, MaxBudget)
		}},
	{func(c Config) bool { return c.DegreeLo >= 1 && c.DegreeLo <= c.DegreeHi && c.DegreeHi <= 64 },
		func(c Config) error {
			return fmt.Errorf("auto: degree=%d..%d: want 1 ≤ lo ≤ hi ≤ 64", c.DegreeLo, c.DegreeHi)
		}},
	{func(c Config) bool { return c.Scale == "both" || c.Scale == "on" || c.Scale == "off" },
		func(c Config) error { return fmt.Errorf("auto: scale=%s: want both, on or off", c.Scale) }},
	{func(c Config) bool { return c.Memory >= 1<<16 },
		func(c Config) error { return fmt.Errorf("auto: memory=%d: want at least 64KiB", c.Memory) }},
	{func(c Config) bool { return c.Width >= 1 && c.Width <= 256 },
		func(c Config) error { return fmt.Errorf("auto: width=%d: want 1 to 256", c.Width) }},
	{func(c Config) bool { return c.Keep >= 1 && c.Keep <= c.Width },
		func(c Config) error { return fmt.Errorf("auto: keep=%d: want 1 to width (%d)", c.Keep, c.Width) }},
	{func(c Config) bool { return c.Rung >= 1 && c.Window >= 2 && c.Rung <= 1<<30 && c.Window <= 1<<30 },
		func(c Config) error {
			return fmt.Errorf("auto: rung=%d, window=%d: want rung ≥ 1, window ≥ 2", c.Rung, c.Window)
		}},
	{func(c Config) bool { return c.Cost >= 1 && c.Cost <= 1e9 },
		func(c Config) error { return fmt.Errorf("auto: cost=%v: want 1 ≤ cost ≤ 1e9", c.Cost) }},
	{func(c Config) bool { return c.Emit == "vote" || c.Emit == "champion" },
		func(c Config) error { return fmt.Errorf("auto: emit=%s: want vote or champion", c.Emit) }},
	{func(c Config) bool { return c.Margin >= 0 && c.Margin < 1 },
		func(c Config) error { return fmt.Errorf("auto: margin=%v: want 0 ≤ margin < 1", c.Margin) }},
}

// budgetKey is the parameter that bounds learner name's active set:
// budget=, or max= for a learner without a budget in its paper.
func budgetKey(name string) (string, error) {
	if v, ok := budgetKeys.Load(name); ok {
		k := v.(keyOf)
		return k.key, k.err
	}
	key, err := findBudgetKey(name)
	budgetKeys.Store(name, keyOf{key, err})
	return key, err
}

// keyOf is budgetKey's answer for a learner.
type keyOf struct {
	key string
	err error
}

// budgetKeys caches budgetKey's answers: they depend on the learner's name
// alone (the registry is fixed once the packages are initialised), and
// every candidate's name asks (point.spec), at every explorer and every
// estimate of the memory: building the learners to find out was 2 % of
// auto's CPU on a9a.
var budgetKeys sync.Map

// findBudgetKey is budgetKey, found by building the learner.
func findBudgetKey(name string) (string, error) {
	k := learners.Kernel{Kind: learners.Linear}
	if _, err := learners.New(name+":budget=1", k, 0); err == nil {
		return "budget", nil
	}
	if _, err := learners.New(name+":max=1", k, 0); err == nil {
		return "max", nil
	}
	if _, err := learners.New(name, k, 0); err != nil {
		return "", fmt.Errorf("auto: learners: %w", err)
	}
	return "", fmt.Errorf("auto: learners: %s has neither budget= nor max=", name)
}

// Parse reads the spec's parameters: learners=rbp|projectron++,
// kernels=rbf|linear, gamma=0.01..1, c=0.001..10, budget=100..400 (or 100..,
// open), degree=1..4,
// scale=both|on|off, kernel=search|given, memory=64MiB, width=48, keep=3,
// rung=200, window=1000, margin=0.01, drift=adwin, cost=10, emit=vote. A range may be one
// value.
func Parse(sp learners.Spec) (Config, error) {
	var c Config
	if sp.Name != Name {
		return c, fmt.Errorf("auto: spec %s is not %s", sp, Name)
	}
	for k, v := range sp.Params {
		var err error
		switch k {
		case "learners":
			c.Learners = strings.Split(v, "|")
		case "kernels":
			c.Kernels = strings.Split(v, "|")
		case "gamma":
			c.GammaLo, c.GammaHi, err = floatRange(v)
		case "c":
			c.CLo, c.CHi, err = floatRange(v)
		case "budget":
			if strings.HasSuffix(v, "..") {
				v += strconv.Itoa(MaxBudget) // open: memory= and cost= bound it
			}
			c.BudgetLo, c.BudgetHi, err = intRange(v)
		case "degree":
			c.DegreeLo, c.DegreeHi, err = intRange(v)
		case "scale":
			c.Scale = v
		case "kernel":
			switch v {
			case "search":
			case "given":
				c.FixedKernel = true
			default:
				err = fmt.Errorf("want search or given")
			}
		case "memory":
			c.Memory, err = ParseBytes(v)
		case "width":
			c.Width, err = strconv.Atoi(v)
		case "keep":
			c.Keep, err = strconv.Atoi(v)
		case "rung":
			c.Rung, err = strconv.Atoi(v)
		case "window":
			c.Window, err = strconv.Atoi(v)
		case "margin":
			c.Margin, err = strconv.ParseFloat(v, 64)
		case "drift":
			c.Drift = v
		case "cost":
			c.Cost, err = strconv.ParseFloat(v, 64)
		case "emit":
			c.Emit = v
		default:
			return c, fmt.Errorf("auto: unknown parameter %s (valid: budget, c, cost, degree, drift, emit, gamma, keep, kernel, kernels, learners, margin, memory, rung, scale, width, window)", k)
		}
		if err != nil {
			return c, fmt.Errorf("auto: %s=%s: %w", k, v, err)
		}
	}
	return c.withDefaults()
}

// Spec is the canonical spec of c, every parameter included.
func (c Config) Spec() string {
	kernel := "search"
	if c.FixedKernel {
		kernel = "given"
	}
	return fmt.Sprintf("%s:budget=%d..%d,c=%s..%s,cost=%s,degree=%d..%d,drift=%s,emit=%s,gamma=%s..%s,keep=%d,kernel=%s,kernels=%s,learners=%s,margin=%s,memory=%s,rung=%d,scale=%s,width=%d,window=%d",
		Name, c.BudgetLo, c.BudgetHi, fmtFloat(c.CLo), fmtFloat(c.CHi), fmtFloat(c.Cost), c.DegreeLo, c.DegreeHi, c.Drift, c.Emit, fmtFloat(c.GammaLo), fmtFloat(c.GammaHi), c.Keep, kernel,
		strings.Join(c.Kernels, "|"), strings.Join(c.Learners, "|"), fmtFloat(c.Margin), FormatBytes(c.Memory),
		c.Rung, c.Scale, c.Width, c.Window)
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func floatRange(s string) (lo, hi float64, err error) {
	a, b, ok := strings.Cut(s, "..")
	if lo, err = strconv.ParseFloat(a, 64); err != nil {
		return 0, 0, err
	}
	hi = lo
	if ok {
		if hi, err = strconv.ParseFloat(b, 64); err != nil {
			return 0, 0, err
		}
	}
	if !(lo > 0 && lo <= hi) || math.IsInf(hi, 0) {
		return 0, 0, fmt.Errorf("want 0 < lo ≤ hi")
	}
	return lo, hi, nil
}

func intRange(s string) (lo, hi int, err error) {
	a, b, ok := strings.Cut(s, "..")
	if lo, err = strconv.Atoi(a); err != nil {
		return 0, 0, err
	}
	hi = lo
	if ok {
		if hi, err = strconv.Atoi(b); err != nil {
			return 0, 0, err
		}
	}
	if lo < 1 || lo > hi {
		return 0, 0, fmt.Errorf("want 1 ≤ lo ≤ hi")
	}
	return lo, hi, nil
}

// ParseBytes reads a size: bytes, or with a unit KiB, MiB, GiB (or kB, MB,
// GB, powers of 1000).
func ParseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("want a size such as 64MiB")
	}
	return n * mult, nil
}

// FormatBytes writes a size as ParseBytes reads it, in the largest binary
// unit that divides it.
func FormatBytes(n int64) string {
	switch {
	case n > 0 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "GiB"
	case n > 0 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "MiB"
	case n > 0 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "KiB"
	}
	return strconv.FormatInt(n, 10)
}
