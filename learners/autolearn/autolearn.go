// Package autolearn is the learner "auto": it picks the learner, the kernel
// and its parameter, the budget and the scaling by itself, online, and keeps
// picking as the stream drifts (docs/auto.md).
//
// The rules up front:
//   - A candidate is a learner (Config.Learners) at a budget, with its C
//     for PA-I, on a kernel (linear, polynomial of a degree, RBF of a γ),
//     on the records as they come or scaled online (each feature divided
//     by its standard deviation over the records before and the record;
//     only those present in at least half the records centred, so that
//     sparse records stay sparse). The Perceptron and PA-I on the linear
//     kernel or degree 1 have no budget: they are primal.
//   - Every candidate alive predicts, then learns, every record. The
//     emitted margin is the candidates' vote (Config.Emit "vote", the
//     default): each votes its sign with a weight that falls by e^−η
//     (η = 0.2) at each of its mistakes and is shared at a rate α = 0.01
//     (Herbster and Warmuth's fixed share), in [−1, 1], the champion's
//     margin on a tie; a candidate is born with 1 % of the mean weight
//     (all the first ones with equal weights). With Emit "champion" it is
//     the champion's margin. A many-class model's classes vote as one
//     (see Vote): each candidate for the class of its largest margin. A
//     switch takes effect from the next record.
//   - Successive halving: the search starts with Config.Width candidates
//     spread over the space (every kernel and scaling first, then every
//     learner), all born at the first record, and beside them up to as
//     many primal ones, halved apart (see grid and halved). After Rung labeled records,
//     then 2·Rung more, 4·Rung more…, the better half by mistakes in the
//     rung stays (ties to fewer since birth, then to the earlier born) and
//     the best is champion, until Config.Keep are left. Along a rung the
//     champion is the rung's leader so far, once it has made fewer
//     mistakes in the rung than the champion.
//   - Then a duel per challenger: after a warm-up of Window/2 labeled
//     records from its birth, a challenger's mistakes over Window labeled
//     records are compared with the champion's over the same records. The
//     challenger becomes champion when it made fewer by more than
//     Margin·Window (the old champion stays, as a challenger); otherwise
//     the challenger goes, and an explorer near the champion takes its
//     place: γ ×3 or ÷3, C ×3 or ÷3, budget ÷2, degree ±1,
//     the other scaling, another learner or kernel family, drawn from the
//     neighbours not alive (and, while there are such, not among the last
//     16 losers). A change of champion restarts the duels under way.
//   - Budget ×2: once the champion's active set is full, its own learner
//     copied at twice the budget (learners.WithBudget), trained as it is,
//     joins within 32 labeled records, in place of the worst challenger
//     when no place is free; its duel starts at once, lasts Window/2
//     labeled records, and it wins with any fewer mistakes than the
//     champion's. A primal champion has no budget: then the best
//     challenger with one is copied (growing), the copy dueling the
//     champion, and that challenger stays, its duel restarted, when it
//     loses a duel; both answer to Config.Cost like any challenger.
//   - Drift: a detector (Config.Drift, ADWIN by default) watches the
//     emitted mistakes after the halving. When their rate rises, the
//     search reopens: each candidate's configuration is born again,
//     untrained, at its budget and at half of it, and the halving runs
//     again from a rung of Config.Rung records.
//   - Cost: each candidate's work (learners.Outcome.Work, counted, not
//     timed) is summed over the labeled rounds. At a rung's end the
//     candidates whose work in the rung exceeds Config.Cost times the
//     rung's median go before the halving; after the halving, a
//     challenger whose work exceeds Config.Cost times the champion's
//     over the same records loses once Rung labeled records tell.
//   - Memory: the candidates' estimated peak (learners.EstimateMemory on
//     the records' average non-zeros and largest index) plus the scaler's
//     statistics stay under Config.Memory: the worst candidates by mistake
//     rate since birth go first, and an explorer that would not fit is not
//     started.
//   - Deterministic given the seed and the records: candidate i's learner
//     is seeded from (seed, i), the grid's order and the explorers are
//     drawn from a generator of the seed, whose state is in the encoding.
//     MarshalBinary holds every candidate and the search's whole state;
//     a decoded learner continues with bit-identical margins and choices.
package autolearn

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/drift"
	"github.com/streamlearner/streamlearner/learners/rng"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

func init() {
	learners.RegisterComposite(learners.Composite{
		Info: learners.Info{
			Name:    Name,
			Summary: "searches learners, kernels, γ, budget and scaling online: successive halving over prequential windows, then duels with explorers near the champion (docs/auto.md)",
			Source:  "successive halving (Jamieson and Talwalkar, AISTATS 2016), played prequentially",
			Params: []learners.ParamInfo{
				{Name: "learners", Default: strings.Join(DefaultLearners, "|"), Doc: "learners searched, |-separated"},
				{Name: "kernels", Default: "linear|poly|rbf", Doc: "kernel families searched"},
				{Name: "kernel", Default: "search", Doc: "given: only the kernel given (--kernel)"},
				{Name: "gamma", Default: "0.001..10", Doc: "RBF γ range"},
				{Name: "c", Default: "0.001..10", Doc: "range of the aggressiveness C of the learners that take one (PA-I)"},
				{Name: "budget", Default: "50..400", Doc: "budget range; open (50..): a full champion's copy at twice its budget grows as far as memory= and cost= allow"},
				{Name: "degree", Default: "1..4", Doc: "polynomial degree range (coef0=1: degree 1 is linear with an intercept)"},
				{Name: "scale", Default: "both", Doc: "online scaling: both, on, off"},
				{Name: "memory", Default: "64MiB", Doc: "bound on the candidates' memory; k classes of a many-class model share min(k, 4) times it"},
				{Name: "width", Default: "48", Doc: "candidates at the start"},
				{Name: "keep", Default: "3", Doc: "candidates after the halving (champion and challengers)"},
				{Name: "rung", Default: "200", Doc: "labeled records of the first halving rung"},
				{Name: "window", Default: "1000", Doc: "labeled records of a duel"},
				{Name: "margin", Default: "0.01", Doc: "rate a challenger must win a duel by"},
				{Name: "drift", Default: "adwin", Doc: "detector whose alarm at a rise of the mistake rate reopens the search: adwin, ddm, page-hinkley or none"},
				{Name: "cost", Default: "10", Doc: "a candidate whose counted work exceeds this many times the rung's median candidate's (the champion's, after the halving) goes"},
				{Name: "emit", Default: "vote", Doc: "what is emitted: vote (the candidates' weighted vote) or champion (its margin alone)"},
			},
		},
		Magic: magic,
		New: func(sp learners.Spec, k learners.Kernel, seed uint64) (learners.Learner, error) {
			cfg, err := Parse(sp)
			if err != nil {
				return nil, err
			}
			return New(cfg, k, seed)
		},
		Decode: func(b []byte) (learners.Learner, error) { return Unmarshal(b) },
		Memory: func(sp learners.Spec, k learners.Kernel, _ learners.Data) (learners.Memory, error) {
			cfg, err := Parse(sp)
			if err != nil {
				return learners.Memory{}, err
			}
			m := learners.BoundedMemory(cfg.Spec(), cfg.Keep*cfg.BudgetHi, cfg.Memory, cfg.Memory, "auto's memory=")
			m.Group = groupShare * cfg.Memory // a many-class model's classes divide it (bound)
			m.SnapshotFloor = snapshotFloor
			return m, nil
		},
	})
}

// snapshotFloor is what saving one class's search allocates however
// little of a shared memory= it holds: its candidates' encodings and the
// copy decoded to check them. Measured at the default search: 1.3 MB for
// a search holding 0.3 MB, 1.7 MB a class for ten classes sharing 4 MiB
// (checkpoint's TestModelMemoryCoversASave).
const snapshotFloor = 2 << 20

// point is a candidate's configuration.
type point struct {
	learner string
	budget  int
	kernel  learners.Kernel
	scale   bool
	c       float64 // the learner's aggressiveness C (PA-I); 0 for one without
}

// spec is the candidate's learner spec; a budget of 0 is a learner with
// no cap, in primal form (see unbounded).
func (p point) spec() string {
	var ps []string
	if p.c > 0 {
		ps = append(ps, "c="+fmtFloat(p.c))
	}
	if p.budget > 0 {
		key, _ := budgetKey(p.learner)
		ps = append(ps, key+"="+strconv.Itoa(p.budget))
	}
	if len(ps) == 0 {
		return p.learner
	}
	return p.learner + ":" + strings.Join(ps, ",")
}

// hasC reports whether learner name takes an aggressiveness c= (PA-I).
func hasC(name string) bool { return takesC()[name] }

// takesC is the learners with a parameter c=, from the registry (fixed
// once the packages are initialised).
var takesC = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, info := range learners.Available() {
		m[info.Name] = slices.ContainsFunc(info.Params, func(p learners.ParamInfo) bool { return p.Name == "c" })
	}
	return m
})

// cs are the first candidates' values of C for learner name: the ×10
// grid of Config.CLo..CHi, or none (0) when it takes no C.
func (a *Auto) cs(name string) []float64 {
	if !hasC(name) {
		return []float64{0}
	}
	return gammas(a.cfg.CLo, a.cfg.CHi)
}

// unbounded is p without a budget when its learner keeps its model in
// primal form on p's kernel (learners.Unbounded: the Perceptron and PA-I
// on a linear kernel), at the first budget when it needs one again (a
// neighbour on another kernel or learner). A cap on a primal learner
// only cut short what it may learn: its w costs d weights whatever the
// support (on a9a, PA-I at C = 1 made 21.0 % mistakes unbounded).
func (a *Auto) unbounded(p point) point {
	if p.budget == 0 {
		p.budget = a.budget0()
	}
	if primalOn(p.learner, p.kernel) {
		p.budget = 0
	}
	return p
}

// primalKnown caches primalOn's answers: they depend on the learner's name
// and the kernel alone, and a class's search (a many-class model makes one
// a class, and a checkpoint's check decodes the model) asks for some 1,400
// points of its grid.
var primalKnown sync.Map

// primalOn reports whether learner keeps its model in primal form on k
// once uncapped (learners.Unbounded).
func primalOn(learner string, k learners.Kernel) bool {
	id := learner + " " + k.String()
	if v, ok := primalKnown.Load(id); ok {
		return v.(bool)
	}
	key, err := budgetKey(learner)
	if err != nil {
		return false
	}
	_, ok := learners.Unbounded(learner+":"+key+"=1", k)
	primalKnown.Store(id, ok)
	return ok
}

// String names the candidate: "rbp:budget=100 kernel=rbf:gamma=0.1", with
// " scaled" when it learns on scaled records.
func (p point) String() string {
	s := p.spec() + " kernel=" + p.kernel.String()
	if p.scale {
		s += " scaled"
	}
	return s
}

// cand is one candidate alive.
type cand struct {
	id    uint64 // creation number: its learner's seed stream
	pt    point
	name  string
	l     learners.Learner
	born  uint64 // labeled records before its first
	total uint64 // mistakes since birth
	rung  uint64 // mistakes in the halving's current rung
	// The duel (after the halving): from is the labeled count from which
	// its mistakes and the champion's are counted, mine and champ those
	// counts.
	from        uint64
	mine, champ uint64
	// Work (learners.Outcome.Work) over the labeled rounds: since birth,
	// in the halving's current rung, and in the duel, its own and the
	// champion's over the same records.
	spent, rungWork, mineWork, champWork uint64

	// parent is 1 + the id of the candidate it was grown from (a copy of
	// its learner at twice the budget), 0 for one born untrained.
	parent uint64

	// recent is its mistakes discounted by 1 − 1/Window a labeled round:
	// about those of the last Window labeled records (recall).
	recent float64

	f       float64 // this round's margin
	mistake bool
	// w is its weight in the vote; 0 until its first vote, which gives
	// it newShare of the mean weight (see weights).
	w    float64
	work uint64 // this round's work
}

// Change is a change of champion, decided at labeled record After (After
// labeled records had been seen): Name is champion from labeled record
// After+1 on, the number reports give (the first champion's is 1).
type Change struct {
	After uint64 `json:"after"`
	Name  string `json:"name"`
	// Why is what decided it; nil for the first champion and for changes
	// made before a restore (a snapshot does not keep it).
	Why *Why `json:"why,omitempty"`
}

// From is the 1-based number of the first labeled record at which Name is
// champion: what eval, replay, checkpoint inspect and run's log print.
func (c Change) From() uint64 { return c.After + 1 }

// Why is what decided a change of champion: the new champion's mistakes
// against the runner-up's over the labeled records the rule counted.
type Why struct {
	// Rule is "rung" (it leads the halving's rung so far), "halving" (the
	// best at a rung's end) or "duel" (it won its duel with the champion).
	Rule string `json:"rule"`
	// Over is the labeled records counted: the rung so far, the rung, or
	// the duel's window.
	Over     uint64 `json:"over"`
	Mistakes uint64 `json:"mistakes"` // the new champion's, over them
	// RunnerUp is the old champion (rung, duel) or the rung's second best
	// (halving; "" when it was alone), with its mistakes over them.
	RunnerUp         string `json:"runner_up"`
	RunnerUpMistakes uint64 `json:"runner_up_mistakes"`
}

// String says why in a line: "won its duel: 12 mistakes against 25 for the
// old champion over 1000 labeled records".
func (w Why) String() string {
	what, other := map[string]string{"rung": "leads the rung so far", "halving": "best at the rung's end", "duel": "won its duel"}[w.Rule], "the old champion"
	if w.Rule == "halving" {
		other = "the runner-up, " + w.RunnerUp
		if w.RunnerUp == "" {
			return fmt.Sprintf("%s: %s over %d labeled records, alone", what, mistakes(w.Mistakes), w.Over)
		}
	}
	return fmt.Sprintf("%s: %s against %d for %s, over %d labeled records", what, mistakes(w.Mistakes), w.RunnerUpMistakes, other, w.Over)
}

// maxHistory bounds the champion changes kept.
const maxHistory = 64

// maxLosers is how many recent duel losers explorers avoid.
const maxLosers = 16

// scaleCap bounds the features the scaler keeps statistics for: indices
// from it on are not scaled.
const scaleCap = 1 << 20

const (
	streamGrid = 0x6175746f67726964 // "autogrid"
	streamCand = 0x6175746f63000000 // "autoc" + candidate number
)

// Auto is the learner. Not safe for concurrent use.
type Auto struct {
	cfg    Config
	spec   string
	kernel learners.Kernel // the one given: kernel=given searches it alone
	seed   uint64
	src    *rng.Source

	cands    []*cand
	champion int // index in cands
	// bench is the primal PA-I candidates the halving cut or a duel beat,
	// at most benchCap (benchOne), kept learning beside the search: they
	// do not vote, duel or hold a place, and one comes back (recall) when
	// it has erred less of late than every primal candidate alive. Empty
	// in a group. A state decoded may hold more, or a Perceptron (format 8
	// before the cap): the next benching trims it to the cap.
	bench   []*cand
	nextID  uint64
	labeled uint64 // labeled rounds
	rounds  uint64 // rounds played (for the records' shape)
	nnz     uint64 // non-zeros over the rounds played
	maxIdx  uint32
	halving bool
	// reopens counts the rises of the emitted mistakes that reopened the
	// search; watch sees them (nil with drift=none).
	reopens  uint64
	watch    drift.Detector
	rungEnd  uint64
	rungLen  uint64
	switches uint64
	history  []Change
	losers   []string
	// why is the reason of the change of champion setCands is about to
	// make (switched records it).
	why *Why

	// The scaler: per feature j, the sum of its values over the rounds
	// played at 2j and of their squares at 2j+1.
	stats []float64
	// scaled is this round's scaled record (its own values and indices).
	scaled sparse.Vector
	// centre says whether the scaler centres its dense features (a state
	// of format 7 on; an older one keeps scaling as it did). seen counts,
	// per feature, the rounds in which it was present; dense are the
	// features present in at least half the rounds, increasing: those the
	// scaler centres, adding them to a record that lacks them.
	centre bool
	seen   []uint64
	dense  []uint32

	// grouped: one of a many-class model's one-vs-rest learners, which
	// search as one (see Group); Round then only plays, and Settle keeps
	// the books. lead is the group's first learner, whose search and
	// scaler the others follow (nil for the first itself).
	grouped bool
	lead    *Auto
	// primalDropped: the first primal candidates went when the group
	// formed (dropFirstPrimal).
	primalDropped bool
	// classes is the classes of the lead's group (0 alone, and in a
	// restored lead until Group counts them): bound divides the memory
	// among them.
	classes int

	// peaks caches the candidates' estimated peaks (peak); not state.
	peaks map[peakKey]int64
}

// New builds the search over cfg's space; k is the kernel given, searched
// alone with Config.FixedKernel.
func New(cfg Config, k learners.Kernel, seed uint64) (*Auto, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	a := &Auto{cfg: cfg, spec: cfg.Spec(), kernel: k, seed: seed, src: rng.New(seed, streamGrid),
		halving: true, centre: cfg.Scale != "off", rungLen: uint64(cfg.Rung), rungEnd: uint64(cfg.Rung)}
	if cfg.Drift != "none" {
		if a.watch, err = drift.New(cfg.Drift); err != nil {
			return nil, fmt.Errorf("auto: %w", err)
		}
	}
	drawn, extra := a.grid()
	for _, p := range append(drawn, extra...) {
		if err := a.add(p); err != nil {
			return nil, err
		}
	}
	if len(extra) > 0 {
		// The primal candidates beside the width start in the vote as
		// newborns do (newShare of the mean weight): with equal weights,
		// their quick start led the vote on the kernel streams' first
		// records (letter: 25.76 % against 25.28 without them).
		for _, c := range a.cands[:len(drawn)] {
			c.w = 1 / float64(len(drawn))
		}
	}
	if places(a.cands) <= cfg.Keep {
		a.settle()
	}
	a.history = append(a.history, Change{After: 0, Name: a.cands[0].name})
	return a, nil
}

// kernels are the kernels of the first candidates.
func (a *Auto) kernels() []learners.Kernel {
	if a.cfg.FixedKernel {
		return []learners.Kernel{a.kernel}
	}
	var ks []learners.Kernel
	for _, fam := range a.cfg.Kernels {
		switch fam {
		case "linear":
			ks = append(ks, learners.Kernel{Kind: learners.Linear})
		case "poly":
			for d := a.cfg.DegreeLo; d <= a.cfg.DegreeHi; d++ {
				ks = append(ks, poly(d))
			}
		case "rbf":
			for _, g := range gammas(a.cfg.GammaLo, a.cfg.GammaHi) {
				ks = append(ks, learners.Kernel{Kind: learners.RBF, Gamma: g})
			}
		}
	}
	return ks
}

func poly(d int) learners.Kernel {
	return learners.Kernel{Kind: learners.Poly, Degree: d, Scale: 1, Coef0: 1}
}

// gammas is the ×10 grid from lo to hi, hi included when the last step
// falls short of it.
func gammas(lo, hi float64) []float64 {
	var gs []float64
	g := lo
	for i := 0; g <= hi*(1+1e-9) && i < 64; i++ {
		gs = append(gs, g)
		g = round3(lo * math.Pow(10, float64(i+1)))
	}
	if last := gs[len(gs)-1]; last < hi*(1-1e-9) {
		gs = append(gs, hi)
	}
	return gs
}

// scales are the scalings searched.
func (a *Auto) scales() []bool {
	switch a.cfg.Scale {
	case "on":
		return []bool{true}
	case "off":
		return []bool{false}
	}
	return []bool{false, true}
}

func (a *Auto) budget0() int { return min(max(100, a.cfg.BudgetLo), a.cfg.BudgetHi) }

// budgets0 are the budgets of the first candidates: budget0 and twice it
// (within BudgetHi). One budget left the learners whose active set should
// not fill (text, where SOP with room for every mistake is the best) to
// explorers at ×2, which then had to win a duel untrained: on the Reuters
// streams two budgets took the segments within 15 % of the best from 36
// of 60 to 43 (docs/auto.md); ×4 gave 46 but cost 4.7 times the final
// champion's CPU on a9a. A full champion now grows by a copy (grow).
func (a *Auto) budgets0() []int {
	b := a.budget0()
	if b2 := min(2*b, a.cfg.BudgetHi); b2 != b {
		return []int{b, b2}
	}
	return []int{b}
}

// grid is the first candidates: Config.Width drawn (draw) from every
// learner × kernel × scaling at the first budgets, C at its default; then,
// beside them, up to Width more of the candidates in primal form (the
// Perceptron and PA-I on the linear kernel, with and without the
// intercept, scaled or not, PA-I at every C of the grid), whose round
// costs O(nnz), less than one kernel evaluation of a candidate with a
// budget. The first is the first learner on the middle kernel, unscaled
// when searched. The first draw leaves out degree 1 (for a kernel
// learner about the linear kernel), so that it draws the candidates it
// drew before C and degree 1 were searched.
func (a *Auto) grid() (drawn, extra []point) {
	ks, ss := a.kernels(), a.scales()
	var all, primal []point
	for _, l := range a.cfg.Learners {
		for _, k := range ks {
			for _, s := range ss {
				for _, b := range a.budgets0() {
					if k.Kind != learners.Poly || k.Degree > 1 || len(ks) == 1 {
						all = append(all, a.unbounded(point{learner: l, budget: b, kernel: k, scale: s, c: a.cDefault(l)}))
					}
					for _, c := range a.cs(l) {
						if p := a.unbounded(point{learner: l, budget: b, kernel: k, scale: s, c: c}); p.budget == 0 && !slices.Contains(primal, p) {
							primal = append(primal, p)
						}
					}
				}
			}
		}
	}
	first := a.unbounded(point{learner: a.cfg.Learners[0], budget: a.budget0(), kernel: ks[len(ks)/2], scale: ss[0], c: a.cDefault(a.cfg.Learners[0])})
	out := a.draw(all, first, nil)
	primal = slices.DeleteFunc(primal, func(p point) bool { return slices.Contains(out, p) })
	return out, a.draw(primal, first, func(p point) string { return p.learner + fmtFloat(p.c) })
}

// draw is up to Config.Width of all in a seeded order such that every
// kernel and scaling, then every learner, then every value of also (when
// not nil) comes before any comes twice; first first when it is among
// them. A point may be in all more than once (a primal learner at two
// budgets): it is drawn once.
func (a *Auto) draw(all []point, first point, also func(point) string) []point {
	perm := a.src.Perm(len(all))
	shuffled := make([]point, len(all))
	for i, j := range perm {
		shuffled[i] = all[j]
	}
	// The keys are numbered once, not built in each pass: a pass per
	// point drawn, over some 300 points, naming each one's kernel, was 5 %
	// of auto's CPU on a9a, and a run builds the grid twice (the report's
	// name of the learner builds one).
	pointID, kernID, learnID, alsoID := drawKeys(shuffled, also)
	used := make([]bool, len(shuffled))
	kernUse, learnUse, alsoUse := make([]int, len(shuffled)), make([]int, len(shuffled)), make([]int, len(shuffled))
	var out []point
	take := func(i int) {
		used[pointID[i]] = true
		kernUse[kernID[i]]++
		learnUse[learnID[i]]++
		if also != nil {
			alsoUse[alsoID[i]]++
		}
		out = append(out, shuffled[i])
	}
	if i := slices.Index(shuffled, first); i >= 0 {
		take(i)
	}
	for len(out) < a.cfg.Width {
		best, bestCost := -1, 0
		for i := range shuffled {
			if used[pointID[i]] {
				continue
			}
			cost := (kernUse[kernID[i]]*len(a.cfg.Learners)+learnUse[learnID[i]])<<16 + alsoUse[alsoID[i]]
			if best < 0 || cost < bestCost {
				best, bestCost = i, cost
			}
		}
		if best < 0 {
			break
		}
		take(best)
	}
	return out
}

// drawKeys numbers ps's points, their kernels with scaling, their
// learners and their also keys (all 0 when also is nil), each from 0 in
// order of first appearance: equal keys, equal numbers.
func drawKeys(ps []point, also func(point) string) (pointID, kernID, learnID, alsoID []int) {
	points := map[point]int{}
	kerns, learns, alsos := map[string]int{}, map[string]int{}, map[string]int{}
	number := func(m map[string]int, k string) int {
		id, ok := m[k]
		if !ok {
			id = len(m)
			m[k] = id
		}
		return id
	}
	for _, p := range ps {
		id, ok := points[p]
		if !ok {
			id = len(points)
			points[p] = id
		}
		pointID = append(pointID, id)
		kernID = append(kernID, number(kerns, p.kernel.String()+fmt.Sprint(p.scale)))
		learnID = append(learnID, number(learns, p.learner))
		a := 0
		if also != nil {
			a = number(alsos, also(p))
		}
		alsoID = append(alsoID, a)
	}
	return pointID, kernID, learnID, alsoID
}

// add starts a candidate at p.
func (a *Auto) add(p point) error {
	seed := rng.New(a.seed, streamCand+a.nextID).Uint64()
	l, err := learners.New(p.spec(), p.kernel, seed)
	if err != nil {
		return fmt.Errorf("auto: candidate %s: %w", p, err)
	}
	a.cands = append(a.cands, &cand{id: a.nextID, pt: p, name: p.String(), l: l, born: a.labeled,
		from: a.labeled + uint64(a.cfg.Window/2)})
	a.nextID++
	return nil
}

// Round plays every candidate on (x, y) and returns the champion's outcome.
func (a *Auto) Round(x sparse.Vector, y int) learners.Outcome {
	if y < -1 || y > 1 {
		panic(fmt.Sprintf("autolearn: label %d is not −1, 0 or +1", y))
	}
	xs := a.scale(x)
	ch := a.cands[a.champion]
	in := x
	if ch.pt.scale {
		in = xs
	}
	if why := ch.pt.kernel.Refuses(in); why != "" {
		return learners.Outcome{Margin: math.NaN(), Refused: why}
	}
	updated := false
	var work uint64
	// The records' squared norms, once for every candidate: each
	// learner's computing its own was 2 % of auto's CPU on a9a.
	nx, ns := x.SqNorm(), xs.SqNorm()
	play := func(c *cand) learners.Outcome {
		if c.pt.scale {
			return learners.RoundNorm(c.l, xs, ns, y)
		}
		return learners.RoundNorm(c.l, x, nx, y)
	}
	for _, c := range a.cands {
		o := play(c)
		c.f, c.mistake, c.work = o.Margin, o.Mistake || (o.Refused != "" && y != 0), o.Work
		updated = updated || o.Updated
		work += o.Work
		if c == ch && o.Refused != "" {
			// The champion's margin is not finite: the record is refused
			// (the candidates before it have learned it, as the model's
			// learners do when one refuses).
			return o
		}
	}
	for _, c := range a.bench {
		o := play(c)
		c.mistake, c.work = o.Mistake || (o.Refused != "" && y != 0), o.Work
		work += o.Work
	}
	out := learners.Outcome{Margin: ch.f, Mistake: ch.mistake, Updated: updated, Work: work}
	if a.voting() {
		if v := a.vote(func(c *cand) float64 { return c.f }); v != 0 {
			out.Margin, out.Mistake = v, y != 0 && float64(y)*v <= 0
		}
	}
	if a.grouped {
		return out // Settle keeps the books once every class has played
	}
	a.books(x)
	if y != 0 {
		a.labeled++
		a.score()
	}
	return out
}

// books counts a round's record in the records' shape and the scaler.
func (a *Auto) books(x sparse.Vector) {
	a.rounds++
	a.nnz += uint64(len(x.Idx))
	if n := len(x.Idx); n > 0 {
		a.maxIdx = max(a.maxIdx, x.Idx[n-1])
	}
	a.observe(x)
}

// Predict is the margin Round would emit; nothing changes.
func (a *Auto) Predict(x sparse.Vector) float64 {
	var xs *sparse.Vector // scaled once, if a candidate asked wants it
	margin := func(c *cand) float64 {
		if !c.pt.scale {
			return c.l.Predict(x)
		}
		if xs == nil {
			s := a.scale(x)
			xs = &s
		}
		return c.l.Predict(*xs)
	}
	if a.voting() {
		if v := a.vote(margin); v != 0 {
			return v
		}
	}
	return margin(a.cands[a.champion])
}

// The vote's constants (docs/auto.md): measured on the drifting streams
// and the Reuters shifts, η = 0.1 to 0.3 did about as well, 0.7 and 1.5
// (a vote that follows the last few mistakes) worse, as did α = 0.05
// (too much weight kept by the losers) and 0.001 (too slow a switch).
const (
	voteEta  = 0.2  // a mistake multiplies a weight by e^−η
	voteMix  = 0.01 // α: the share of the total weight spread evenly at each labeled round
	newShare = 0.01 // a newborn's weight, as a share of the mean weight of the others
)

// voting reports whether Round's margin is the binary vote (a group's
// classes emit their champion's margins, which the model replaces with
// the group's vote over the classes, Vote).
func (a *Auto) voting() bool { return a.cfg.Emit == "vote" && !a.grouped }

// weights are the candidates' weights in the vote, in a.cands's order;
// a newborn's is newShare of the others' mean (1 when none has one), so
// that an untrained explorer has little say until the others err.
func (a *Auto) weights() []float64 {
	ws := make([]float64, len(a.cands))
	sum, n := 0.0, 0
	for _, c := range a.cands {
		if c.w > 0 {
			sum += c.w
			n++
		}
	}
	for i, c := range a.cands {
		switch {
		case c.w > 0:
			ws[i] = c.w
		case n == 0:
			ws[i] = 1
		default:
			ws[i] = newShare * sum / float64(n)
		}
	}
	return ws
}

// vote is the candidates' weighted vote on the margins f gives, in
// [−1, 1]: 0 on a tie (or with no finite margin), which the champion
// breaks.
func (a *Auto) vote(f func(*cand) float64) float64 {
	v, sum := 0.0, 0.0
	for i, w := range a.weights() {
		sum += w
		switch m := f(a.cands[i]); {
		case m > 0:
			v += w
		case m < 0:
			v -= w
		}
	}
	return v / sum
}

// reweigh updates the weights on a labeled round's mistakes: ×e^−η for
// each candidate that erred, then the fixed share, normalised to sum 1.
func (a *Auto) reweigh() {
	ws := a.weights()
	sum := 0.0
	for i, c := range a.cands {
		if c.mistake {
			ws[i] *= math.Exp(-voteEta)
		}
		sum += ws[i]
	}
	for i, c := range a.cands {
		c.w = ((1-voteMix)*ws[i] + voteMix*sum/float64(len(ws))) / sum
	}
}

// scale is x scaled by the statistics of the rounds before and of x
// itself: each feature divided by its standard deviation (absent counts
// as 0; a feature with no spread yet is left as it is). Only the dense
// features (present in at least half the rounds) are centred, so that a
// sparse record stays nearly as sparse (at most twice the mean non-zeros
// are dense); a linear candidate learns slowly on an offset that large
// (Adult's age and hours), and an RBF kernel does not see a shift.
// x's own features are known before its label, and counting them keeps an
// early outlier from being scaled by a deviation that has not seen it:
// over sonar's 208 records, PA-I on RBF γ = 0.1 erred 21.7 % so against
// 22.9 % on the rounds before alone (six orders). In storage reused at the
// next call.
func (a *Auto) scale(x sparse.Vector) sparse.Vector {
	st := a
	if a.lead != nil {
		st = a.lead // a group scales by its first learner's statistics
	}
	a.scaled.Idx, a.scaled.Val = a.scaled.Idx[:0], a.scaled.Val[:0]
	n := float64(st.rounds + 1)
	var dense []uint32
	if st.centre {
		dense = st.dense
	}
	i, k := 0, 0
	for i < len(x.Idx) || k < len(dense) {
		var j uint32
		v, centred := 0.0, false
		switch {
		case k == len(dense) || (i < len(x.Idx) && x.Idx[i] < dense[k]):
			j, v = x.Idx[i], x.Val[i]
			i++
		case i == len(x.Idx) || dense[k] < x.Idx[i]:
			j, centred = dense[k], true
			k++
		default:
			j, v, centred = x.Idx[i], x.Val[i], true
			i++
			k++
		}
		if s := st.scaleOne(j, v, n, centred); s != 0 {
			a.scaled.Idx = append(a.scaled.Idx, j)
			a.scaled.Val = append(a.scaled.Val, s)
		}
	}
	return a.scaled
}

// scaleOne is feature j's value v scaled over n rounds (v's own among
// them), centred if asked.
func (a *Auto) scaleOne(j uint32, v, n float64, centred bool) float64 {
	if j >= scaleCap {
		return v // no statistics kept (observe)
	}
	sum, sq := 0.0, 0.0
	if 2*int(j)+1 < len(a.stats) {
		sum, sq = a.stats[2*j], a.stats[2*j+1]
	}
	mean := (sum + v) / n
	// A spread lost in the rounding of the squares' sum (a constant
	// feature of large values) is none.
	if s2 := (sq+v*v)/n - mean*mean; s2 > 1e-12*(sq+v*v)/n {
		if !centred {
			mean = 0
		}
		return (v - mean) / math.Sqrt(s2)
	}
	if centred {
		return 0 // no spread: the feature says nothing yet
	}
	return v
}

// observe adds x to the scaler's statistics, and its features present in
// at least half the rounds to the dense ones; every densePeriod rounds,
// those that fell below go.
func (a *Auto) observe(x sparse.Vector) {
	if a.cfg.Scale == "off" {
		return
	}
	for i, j := range x.Idx {
		if j >= scaleCap {
			break
		}
		if 2*int(j)+1 >= len(a.stats) {
			a.stats = append(a.stats, make([]float64, 2*int(j)+2-len(a.stats))...)
		}
		a.stats[2*j] += x.Val[i]
		a.stats[2*j+1] += x.Val[i] * x.Val[i]
		if a.centre {
			a.count(j)
		}
	}
	if a.centre && a.rounds%densePeriod == 0 {
		kept := a.dense[:0]
		for _, j := range a.dense {
			if 2*a.seen[j] >= a.rounds {
				kept = append(kept, j)
			}
		}
		a.dense = kept
	}
}

// densePeriod is how often (in rounds) the dense features are swept.
const densePeriod = 64

// count counts feature j present in this round, and makes it dense when
// it has been in at least half the rounds.
func (a *Auto) count(j uint32) {
	if int(j) >= len(a.seen) {
		a.seen = append(a.seen, make([]uint64, int(j)+1-len(a.seen))...)
	}
	a.seen[j]++
	if 2*a.seen[j] < a.rounds {
		return
	}
	at, found := slices.BinarySearch(a.dense, j)
	if !found {
		a.dense = slices.Insert(a.dense, at, j)
	}
}

// score counts this labeled round's mistakes and plays the search's rules.
func (a *Auto) score() {
	ch := a.cands[a.champion]
	if a.cfg.Emit == "vote" {
		a.reweigh() // a group's lead keeps the weights of its many-class vote (Vote)
	}
	keep := 1 - 1/float64(a.cfg.Window)
	for _, c := range a.bench {
		c.recent *= keep
		if c.mistake {
			c.recent++
			c.total++
		}
		c.spent += c.work
	}
	for _, c := range a.cands {
		c.recent *= keep
		if c.mistake {
			c.recent++
			c.total++
			c.rung++
		}
		c.spent += c.work
		c.rungWork += c.work
		if !a.halving && c != ch && a.labeled > c.from {
			if c.mistake {
				c.mine++
			}
			if ch.mistake {
				c.champ++
			}
			c.mineWork += c.work
			c.champWork += ch.work
		}
	}
	if a.rose(ch.mistake) && !a.halving {
		a.reopen()
	}
	if a.labeled%1024 == 0 || a.labeled == 1 {
		a.fit(nil)
		if a.halving && places(a.cands) <= a.cfg.Keep {
			a.settle()
		}
	}
	if a.halving {
		switch {
		case a.labeled >= a.rungEnd:
			a.halve()
		default:
			a.crown()
		}
		return
	}
	if a.labeled%growEvery == 0 {
		a.growFull()
		a.recall()
	}
	for i := 0; i < len(a.cands); i++ {
		c := a.cands[i]
		if c == a.cands[a.champion] || a.labeled < c.from {
			continue
		}
		switch span := a.labeled - c.from; {
		case span >= uint64(a.cfg.Rung) && a.tooCostly(c.mineWork, c.champWork):
			a.lose(i)
		case span >= a.duelSpan(c):
			a.duel(i)
		default:
			continue
		}
		i = -1 // the candidates changed: look again from the start
	}
}

// duelSpan is the labeled records of c's duel: Window, or Window/2 for a
// copy at twice the champion's budget (grow). The copy errs differently
// from the champion only where a dropped support vector matters, so a
// shorter duel tells; each doubling took two windows, and the first
// 4,601 Covertype records (docs/auto.md) left time for one: budget 400
// with whole windows, 800 with half ones. On 100,000 Covertype events
// the two changes together took auto from 21.63 % to 18.69 % mistakes;
// each alone, to 21.52 % (born at once) and 22.44 % (half a window).
func (a *Auto) duelSpan(c *cand) uint64 {
	if c.parent != 0 {
		return uint64(a.cfg.Window / 2)
	}
	return uint64(a.cfg.Window)
}

// better reports whether c has the lower mistake rate since birth (ties
// to the earlier born).
func (a *Auto) better(c, d *cand) bool {
	nc, nd := a.labeled-c.born, a.labeled-d.born
	l, r := c.total*max(nd, 1), d.total*max(nc, 1)
	if l != r {
		return l < r
	}
	return c.id < d.id
}

// rank orders candidates as the halving does: by the mistakes of the
// rung, the latest, longest stretch, where each candidate is as trained
// as it will be soon, not its start; ties to the lower rate since birth,
// then to the earlier born.
func (a *Auto) rank(c, d *cand) int {
	switch {
	case c.rung != d.rung:
		return cmp.Compare(c.rung, d.rung)
	case a.better(c, d):
		return -1
	case a.better(d, c):
		return 1
	}
	return 0
}

// crown makes the rung's leader so far champion once it has made fewer
// mistakes in the rung than the champion: the last rung's best (at the
// first rung the first candidate drawn), emitted all along a rung, made
// most of the mistakes auto made beyond its final champion's, in
// many-class mode (pendigits: 4.76 % against 3.12 %) and right after a
// shift (docs/auto.md). Fewer, not as few: a tie broken by the rates since
// birth would hand the predictions back and forth in the rung's first
// records.
func (a *Auto) crown() {
	ch := a.cands[a.champion]
	if best := slices.MinFunc(a.cands, a.rank); best.rung < ch.rung {
		a.why = &Why{Rule: "rung", Over: a.labeled - (a.rungEnd - a.rungLen), Mistakes: best.rung, RunnerUp: ch.name, RunnerUpMistakes: ch.rung}
		a.setCands(a.cands, best)
	}
}

// rose reports whether the drift detector saw the emitted mistake rate
// rise at this labeled round. A fall is good news, not a reason to search.
func (a *Auto) rose(mistake bool) bool {
	if a.watch == nil {
		return false
	}
	m, hasMean := a.watch.(interface{ Mean() float64 })
	before := 0.0
	if hasMean {
		before = m.Mean()
	}
	return a.watch.Add(mistake) && (!hasMean || m.Mean() > before)
}

// reopen answers a rise of the emitted mistakes: every candidate's
// configuration is born again untrained, and again at half its budget,
// beside the trained candidates (a shift of the target makes what they
// learned wrong, and a budget learner forgets it at the pace of its
// budget), as memory allows; then halving rungs from Config.Rung records
// keep the better half, the rung's leader champion, down to Config.Keep.
func (a *Auto) reopen() {
	pts := []point{a.cands[a.champion].pt}
	for i, c := range a.cands {
		if i != a.champion {
			pts = append(pts, c.pt)
		}
	}
	for _, p := range slices.Clone(pts) {
		if p.budget/2 >= a.cfg.BudgetLo {
			p.budget /= 2
			pts = append(pts, p)
		}
	}
	for _, p := range pts {
		if !a.fit(&p) || a.add(p) != nil {
			break
		}
	}
	a.reopens++
	a.halving = true
	a.rungLen = uint64(a.cfg.Rung)
	a.rungEnd = a.labeled + a.rungLen
	for _, c := range a.cands {
		c.rung, c.rungWork = 0, 0
	}
}

// halve ends a rung: the candidates that cost more than Config.Cost
// times the rung's median candidate go, then the better half of the rest
// stays, the best champion.
func (a *Auto) halve() {
	// The median of the candidates with a budget: the primal ones, each
	// a fraction of a kernel candidate's work, would lower it until the
	// bound dropped most kernel candidates (Nursery events: the halving
	// ended at 600 labeled records, and 12.31 % mistakes against 8.85).
	var works []uint64
	for _, c := range a.cands {
		if c.pt.budget > 0 || places(a.cands) == len(a.cands) {
			works = append(works, c.rungWork)
		}
	}
	slices.Sort(works)
	median := works[(len(works)-1)/2]
	ranked := slices.DeleteFunc(slices.Clone(a.cands), func(c *cand) bool { return a.tooCostly(c.rungWork, median) })
	slices.SortStableFunc(ranked, a.rank)
	if len(ranked) > 0 {
		a.why = &Why{Rule: "halving", Over: a.labeled - (a.rungEnd - a.rungLen), Mistakes: ranked[0].rung}
		if len(ranked) > 1 {
			a.why.RunnerUp, a.why.RunnerUpMistakes = ranked[1].name, ranked[1].rung
		}
	}
	for _, c := range a.cands {
		c.rung, c.rungWork = 0, 0
	}
	kept := halved(ranked, a.cfg.Keep)
	for _, c := range a.cands {
		if !slices.Contains(kept, c) {
			a.benchOne(c)
		}
	}
	a.setCands(kept, ranked[0])
	a.rungLen *= 2
	a.rungEnd = a.labeled + a.rungLen
	if places(a.cands) <= a.cfg.Keep {
		a.settle()
	}
}

// places is the candidates the halving counts: those with a budget (all
// when none has one). The primal candidates that grid adds beside the
// width are halved apart (halved) and do not delay the halving's end.
func places(cs []*cand) int {
	n := 0
	for _, c := range cs {
		if c.pt.budget > 0 {
			n++
		}
	}
	if n == 0 {
		return len(cs)
	}
	return n
}

// halved is what a rung's end keeps of ranked (best first): the better
// half of the candidates with a budget, at least keep, and apart the
// better half of those without (primal). Halved together, the linear
// candidates, which learn fastest, took the places of kernel candidates
// that are better later: covtype went from 34.31 % to 38.13 % mistakes,
// waveform from 11.61 % to 12.43 %. Those left when the halving ends
// duel the champion, and are not replaced until Config.Keep are left.
func halved(ranked []*cand, keep int) []*cand {
	var dual, primal []*cand
	for _, c := range ranked {
		if c.pt.budget > 0 {
			dual = append(dual, c)
		} else {
			primal = append(primal, c)
		}
	}
	if len(dual) == 0 {
		return ranked[:min(max(keep, (len(ranked)+1)/2), len(ranked))]
	}
	dual = dual[:min(max(keep, (len(dual)+1)/2), len(dual))]
	return append(dual, primal[:(len(primal)+1)/2]...)
}

// settle ends the halving: the duels start now for the candidates left,
// which are warm already, and explorers fill the free places.
func (a *Auto) settle() {
	a.halving = false
	for _, c := range a.cands {
		c.from, c.mine, c.champ, c.mineWork, c.champWork = a.labeled, 0, 0, 0, 0
	}
	a.explore()
}

// setCands makes cs the candidates, in birth order, with champion ch.
func (a *Auto) setCands(cs []*cand, ch *cand) {
	slices.SortFunc(cs, func(c, d *cand) int { return int(c.id) - int(d.id) })
	prev := a.cands[a.champion]
	a.cands = cs
	a.champion = slices.Index(cs, ch)
	if ch != prev {
		a.switched()
	}
	a.why = nil
}

// switched records a change of champion and restarts the duels.
func (a *Auto) switched() {
	ch := a.cands[a.champion]
	a.switches++
	a.history = append(a.history, Change{After: a.labeled, Name: ch.name, Why: a.why})
	if len(a.history) > maxHistory {
		a.history = slices.Delete(a.history, 0, len(a.history)-maxHistory)
	}
	for _, c := range a.cands {
		c.from, c.mine, c.champ, c.mineWork, c.champWork = max(c.from, a.labeled), 0, 0, 0, 0
	}
}

// duel settles challenger i's duel with the champion.
func (a *Auto) duel(i int) {
	c := a.cands[i]
	// A copy of the champion at twice its budget (grow) wins with fewer
	// mistakes, by any number: it errs differently from the champion only
	// where the support vectors the champion dropped matter, so a margin
	// meant for a stranger's noise kept it from ever winning (Reuters,
	// acq: 51 mistakes against the champion's 55 in the window).
	margin := a.cfg.Margin * float64(a.cfg.Window)
	if c.parent != 0 {
		margin = 0
	}
	if float64(c.champ)-float64(c.mine) > margin {
		// The old champion stays as a challenger: it is trained, and
		// the next duel may bring it back.
		a.why = &Why{Rule: "duel", Over: a.labeled - c.from, Mistakes: c.mine, RunnerUp: a.cands[a.champion].name, RunnerUpMistakes: c.champ}
		a.setCands(a.cands, c)
		return
	}
	if a.growing() == c && c != a.cands[a.champion] {
		// The best kernel challenger of a primal champion stays, trained,
		// for its copies to grow (growFull) until one wins.
		c.from, c.mine, c.champ, c.mineWork, c.champWork = a.labeled, 0, 0, 0, 0
		return
	}
	a.lose(i)
}

// lose removes challenger i as a duel's loser: explorers avoid it for a
// while, and one takes its place.
func (a *Auto) lose(i int) {
	a.losers = append(a.losers, a.cands[i].name)
	if len(a.losers) > maxLosers {
		a.losers = slices.Delete(a.losers, 0, len(a.losers)-maxLosers)
	}
	a.benchOne(a.cands[i])
	a.setCands(slices.Delete(slices.Clone(a.cands), i, i+1), a.cands[a.champion])
	a.explore()
}

// tooCostly reports whether work exceeds Config.Cost times ref, the
// work of the reference (the champion's over the same records, or the
// rung's median candidate's). A reference that did no work yet allows
// any cost: nothing is known.
func (a *Auto) tooCostly(work, ref uint64) bool {
	return ref > 0 && float64(work) > a.cfg.Cost*float64(ref)
}

// explore starts explorers near the champion while there are free places
// and memory for them.
func (a *Auto) explore() {
	for len(a.cands) < a.cfg.Keep {
		ns := a.neighbours()
		if len(ns) == 0 {
			return
		}
		fresh := slices.DeleteFunc(slices.Clone(ns), func(p point) bool { return slices.Contains(a.losers, p.String()) })
		if len(fresh) > 0 {
			ns = fresh
		}
		p := ns[a.src.Intn(len(ns))]
		if g := a.cands[a.champion].pt.grown(); slices.Contains(ns, g) && !slices.Contains(a.losers, g.String()) {
			p = g
		}
		if !a.fit(&p) {
			return
		}
		add := a.add
		if ch := a.cands[a.champion]; p == ch.pt.grown() {
			add = a.grow
		}
		if j := slices.IndexFunc(a.bench, func(c *cand) bool { return c.pt == p }); j >= 0 {
			add = func(point) error {
				a.unbench(j)
				return nil
			}
		}
		if err := add(p); err != nil {
			return // a neighbour the learners refuse: the place stays free
		}
	}
}

// cDefault is the C of learner name in the first draw: its default, 1,
// within the range (0 when it takes none).
func (a *Auto) cDefault(name string) float64 {
	if !hasC(name) {
		return 0
	}
	return min(max(1, a.cfg.CLo), a.cfg.CHi)
}

// grown is p at twice its budget.
func (p point) grown() point {
	p.budget *= 2
	return p
}

// grow starts the explorer at p, the champion at twice its budget, as a
// copy of the champion's learner: a budget is worth more only once it is
// full, and an untrained learner at twice the budget, beside a champion
// trained on the whole stream, loses its duel for want of training, not
// of budget (Reuters: the best learner's active set never fills, and
// auto's never grew past its first budget). The copy plays as the
// champion until the champion drops a support vector the copy keeps, so
// its duel starts at once, without a warm-up.
func (a *Auto) grow(p point) error { return a.growFrom(a.cands[a.champion], p) }

// growFrom starts the explorer at p as a copy of src's learner (p is src
// at twice its budget).
func (a *Auto) growFrom(src *cand, p point) error {
	l, err := learners.WithBudget(src.l, p.budget)
	if err != nil {
		return fmt.Errorf("auto: candidate %s: %w", p, err)
	}
	a.cands = append(a.cands, &cand{id: a.nextID, pt: p, name: p.String(), l: l, born: a.labeled,
		from: a.labeled, parent: src.id + 1})
	a.nextID++
	return nil
}

// growEvery is how often (labeled records) a full champion is checked
// for a copy at twice its budget (growFull).
const growEvery = 32

// growFull starts the copy of a full champion at twice its budget at once,
// in place of the worst challenger when no place is free. Waiting for a
// place, the copy came only after the challengers the halving left had
// lost their duels, a window later, and won its own a window after that:
// on a stream of 4,601 records (Covertype's first, spam's length) the
// halving ended at 3,000, the copy was born at 4,001 and auto ended at
// budget 200, where PA-I on RBF errs 26.3 % at 3,200 against 35.7 % at
// 200. The challenger that goes has the highest mistake rate since birth
// (those the halving left had lost its last rung to the champion).
func (a *Auto) growFull() {
	ch := a.growing()
	if ch == nil {
		return
	}
	q := ch.pt.grown()
	if q.budget <= 0 || q.budget > a.cfg.BudgetHi || ch.l.Size() < ch.l.Budget() ||
		slices.ContainsFunc(a.cands, func(c *cand) bool { return c.pt == q }) || slices.Contains(a.losers, q.String()) {
		return
	}
	if len(a.cands) >= a.cfg.Keep {
		worst := -1
		for i, c := range a.cands {
			if i != a.champion && c != ch && (worst < 0 || a.better(a.cands[worst], c)) {
				worst = i
			}
		}
		if worst < 0 {
			return
		}
		a.setCands(slices.Delete(slices.Clone(a.cands), worst, worst+1), a.cands[a.champion])
	}
	if a.fit(&q) {
		_ = a.growFrom(ch, q) // a budget the learner refuses: the place stays free, explore fills it
	}
	if len(a.cands) < a.cfg.Keep {
		a.explore()
	}
}

// growing is the candidate growFull copies: the champion, or, when the
// champion is primal (no budget), the best challenger with a budget. A
// linear champion the halving chose on Covertype's events' first 1,000
// records held them for 65,000 more, as the kernel explorers one step
// from it, at their first budget, could not beat it over a duel (seed 1:
// 23.50 % mistakes, 22.01 with this). The copies answer to Config.Cost
// like any challenger: exempt, they took that stream to 18.05 % but a9a's
// CPU to 5.1 times its primal champion's (docs/history/auto.md).
func (a *Auto) growing() *cand {
	ch := a.cands[a.champion]
	if ch.pt.budget > 0 {
		return ch
	}
	var best *cand
	for _, c := range a.cands {
		if c.pt.budget > 0 && (best == nil || a.better(c, best)) {
			best = c
		}
	}
	return best
}

// neighbours are the points one step from the champion that are not alive.
func (a *Auto) neighbours() []point {
	p := a.cands[a.champion].pt
	var ns []point
	try := func(q point) {
		if q = a.unbounded(q); q == p || slices.ContainsFunc(a.cands, func(c *cand) bool { return c.pt == q }) || slices.Contains(ns, q) {
			return
		}
		ns = append(ns, q)
	}
	if !a.cfg.FixedKernel {
		for _, k := range a.kernelSteps(p.kernel) {
			q := p
			q.kernel = k
			try(q)
		}
	}
	// A larger budget only once the champion's is full: before, the copy
	// grow makes of it would play exactly as it does.
	ch := a.cands[a.champion]
	if q := p.grown(); q.budget > 0 && q.budget <= a.cfg.BudgetHi && ch.l.Size() >= ch.l.Budget() {
		try(q)
	}
	if q := p; q.budget/2 >= a.cfg.BudgetLo {
		q.budget /= 2
		try(q)
	}
	if a.cfg.Scale == "both" {
		q := p
		q.scale = !p.scale
		try(q)
	}
	if p.c > 0 {
		for _, c := range steps3(p.c, a.cfg.CLo, a.cfg.CHi) {
			q := p
			q.c = c
			try(q)
		}
	}
	for _, l := range a.cfg.Learners {
		q := p
		q.learner = l
		if hasC(l) != (p.c > 0) {
			q.c = a.cDefault(l)
		}
		try(q)
	}
	return ns
}

// steps3 are v×3 and v÷3 (3 significant digits) within lo..hi.
func steps3(v, lo, hi float64) []float64 {
	var out []float64
	for _, w := range []float64{round3(v * 3), round3(v / 3)} {
		if w >= lo*(1-1e-9) && w <= hi*(1+1e-9) {
			out = append(out, w)
		}
	}
	return out
}

// kernelSteps are the kernels one step from k: γ ×3 or ÷3, degree ±1,
// the intercept added to the linear kernel (degree 1), and another family
// (RBF at the grid's middle γ, the lowest degree above 1: degree 1 is a
// step from 2, or from the linear kernel).
func (a *Auto) kernelSteps(k learners.Kernel) []learners.Kernel {
	var ks []learners.Kernel
	switch k.Kind {
	case learners.RBF:
		for _, g := range steps3(k.Gamma, a.cfg.GammaLo, a.cfg.GammaHi) {
			q := k
			q.Gamma = g
			ks = append(ks, q)
		}
	case learners.Linear:
		if a.cfg.DegreeLo == 1 && slices.Contains(a.cfg.Kernels, "poly") {
			ks = append(ks, poly(1))
		}
	case learners.Poly:
		for _, d := range []int{k.Degree - 1, k.Degree + 1} {
			if d >= a.cfg.DegreeLo && d <= a.cfg.DegreeHi {
				q := k
				q.Degree = d
				ks = append(ks, q)
			}
		}
	}
	gs := gammas(a.cfg.GammaLo, a.cfg.GammaHi)
	for _, q := range a.kernels() {
		if q.Kind != k.Kind && (q.Kind != learners.RBF || q.Gamma == gs[len(gs)/2]) &&
			(q.Kind != learners.Poly || q.Degree == min(max(a.cfg.DegreeLo, 2), a.cfg.DegreeHi)) {
			ks = append(ks, q)
		}
	}
	return ks
}

// memory is the estimated peak of the candidates and the scaler, with
// extra's added when not nil.
func (a *Auto) memory(extra *point) int64 {
	d := learners.Data{NNZ: 1, Dim: int(a.maxIdx)}
	if a.rounds > 0 {
		d.NNZ = int((a.nnz + a.rounds - 1) / a.rounds)
	}
	// A primal candidate's w is an array up to where one index in eight
	// is used past the first 4,096 (learners' primal layout), a map of
	// the used ones beyond: on hashed features (2^18 indices) it holds
	// the few used, not an array as wide as the largest index, which
	// counted 5 MiB a candidate and pushed the kernel candidates out.
	dp := d
	if n := a.featuresSeen(); n >= 0 {
		dp.Dim = min(d.Dim, 8*n+4096)
	}
	// A scaled record also holds the dense features it lacks, centred.
	dense := len(a.dense)
	if a.lead != nil {
		dense = len(a.lead.dense)
	}
	est := func(p point) int64 {
		d := d
		if p.budget == 0 {
			d = dp
		}
		if p.scale {
			d.NNZ += dense
		}
		return a.peak(p.spec(), p.kernel, d)
	}
	total := a.scalerMemory()
	for _, c := range a.cands {
		total += est(c.pt)
	}
	for _, c := range a.bench {
		total += est(c.pt)
	}
	if extra != nil {
		total += est(*extra)
	}
	return total
}

// peak is a candidate's estimated peak (learners.EstimateMemory) with its
// overhead, 0 when it has no estimate. The estimates are kept: they
// depend on their arguments alone, which stay the same from one call to
// the next once the records' shape settles, and building the learners
// anew for each, at every explorer and every copy, was 1.5 % of auto's
// CPU on a9a.
func (a *Auto) peak(spec string, k learners.Kernel, d learners.Data) int64 {
	key := peakKey{spec, k, d}
	if b, ok := a.peaks[key]; ok {
		return b
	}
	b := int64(0)
	if m, err := learners.EstimateMemory(spec, k, d); err == nil {
		b = m.Peak + candOverhead
	}
	if len(a.peaks) >= maxPeaks || a.peaks == nil {
		a.peaks = map[peakKey]int64{} // the shapes of old records ask no more
	}
	a.peaks[key] = b
	return b
}

// peakKey is what a candidate's estimated peak depends on.
type peakKey struct {
	spec string
	k    learners.Kernel
	d    learners.Data
}

// maxPeaks bounds the estimates kept: a search asks for a few hundred
// candidates' at one shape of the records (two, scaled and not). At
// about 180 bytes an entry the cache stays under 200 kB, which memory=
// (64 MiB by default) does not count, whatever shapes the records take.
const maxPeaks = 1024

// scalerMemory is the bytes of the scaler's statistics and storage.
func (a *Auto) scalerMemory() int64 {
	return int64(cap(a.stats)*8 + cap(a.seen)*8 + cap(a.dense)*4 + cap(a.scaled.Val)*8 + cap(a.scaled.Idx)*4)
}

// featuresSeen is the number of features with a non-zero value so far,
// as the scaler's statistics tell; −1 when they do not (scale=off, or an
// index past scaleCap seen).
func (a *Auto) featuresSeen() int {
	st := a
	if a.lead != nil {
		st = a.lead
	}
	if a.cfg.Scale == "off" || st.maxIdx >= scaleCap {
		return -1
	}
	n := 0
	for j := 1; j < len(st.stats); j += 2 {
		if st.stats[j] > 0 {
			n++
		}
	}
	return n
}

// candOverhead is what a candidate holds beside its learner: the struct,
// its name and encoding scratch, counted generously.
const candOverhead = 1 << 10

// bound is what the candidates may hold: Config.Memory, and in a group of
// k classes (each holds the lead's candidates) min(k, groupShare) times it
// divided among the k, so that a many-class model whose classes come as
// the stream reveals them stays within a bound whatever their number.
func (a *Auto) bound() int64 {
	k := int64(max(a.classes, 1))
	return a.cfg.Memory * min(k, groupShare) / k
}

// groupShare is how many times Config.Memory a group's classes share: up
// to that many classes each has all of it, as a binary search does. With
// 10 classes sharing one 64 MiB, eval made 16.27 % mistakes on the first
// 3,000 MNIST test records against 13.50 % at 64 MiB a class; sharing four
// times it, 13.50 % again (usps 5.77 % against 5.68, docs/auto.md).
const groupShare = 4

// fit drops the worst challengers until the candidates (and extra, if not
// nil) fit in bound; it reports whether extra fits. Those with a budget go
// before the primal ones (dropFirst): a kernel candidate's scatter array
// is as wide as the largest index, and on hashed events (2^18 indices) it
// holds some 3 MB where a primal candidate holds 0.1 MB. The first check,
// at the first labeled record, finds the 48 kernel candidates over 64 MiB;
// the rates since birth are then all ties, broken against the later born,
// which are the primal ones: 22 of Adult events' 24 went, and with them
// PA-I at a small C, the best of the space there (auto 21.14 % mistakes,
// PA-I at C = 0.01 alone on the linear kernel, scaled, 16.79), each
// freeing a thirtieth of what dropping one kernel candidate frees.
func (a *Auto) fit(extra *point) bool {
	for a.memory(extra) > a.bound() {
		if extra != nil {
			return false // an explorer never pushes a candidate out
		}
		if len(a.bench) > 0 {
			// The bench goes first, its most erring first: it is no
			// part of the search, and on text a primal candidate's w
			// holds every feature seen.
			j := 0
			for i, c := range a.bench {
				if c.recent >= a.bench[j].recent {
					j = i
				}
			}
			a.bench = slices.Delete(a.bench, j, j+1)
			continue
		}
		worst := -1
		for i, c := range a.cands {
			if i != a.champion && (worst < 0 || dropFirst(a.cands[worst], c, a.better)) {
				worst = i
			}
		}
		if worst < 0 {
			return false
		}
		ch := a.cands[a.champion]
		a.setCands(slices.Delete(slices.Clone(a.cands), worst, worst+1), ch)
	}
	return true
}

// dropFirst reports whether fit drops d before c: a candidate with a
// budget before a primal one, else the worse by better.
func dropFirst(c, d *cand, better func(c, d *cand) bool) bool {
	if (c.pt.budget > 0) != (d.pt.budget > 0) {
		return d.pt.budget > 0
	}
	return better(c, d)
}

// Size is the champion's support set.
func (a *Auto) Size() int { return a.cands[a.champion].l.Size() }

// Budget is the champion's budget.
func (a *Auto) Budget() int { return a.cands[a.champion].l.Budget() }

// Spec is the canonical spec, every parameter included.
func (a *Auto) Spec() string { return a.spec }

// Kernel is the kernel given (the candidates have their own).
func (a *Auto) Kernel() learners.Kernel { return a.kernel }

// Champion names the candidate whose margins are emitted.
func (a *Auto) Champion() string { return a.cands[a.champion].name }

// Reopens counts the rises of the emitted mistake rate that reopened the
// search (Config.Drift).
func (a *Auto) Reopens() uint64 { return a.reopens }

// Switches counts the changes of champion.
func (a *Auto) Switches() uint64 { return a.switches }

// History is the latest changes of champion (at most 64), the first
// champion first when it is still among them, as a snapshot keeps them:
// without their Why (see Changes).
func (a *Auto) History() []Change {
	h := slices.Clone(a.history)
	for i := range h {
		h[i].Why = nil
	}
	return h
}

// Changes is History with what decided each change, where known.
func (a *Auto) Changes() []Change { return slices.Clone(a.history) }

// LastChange is the latest change of champion (the first champion when
// there was none), with its Why.
func (a *Auto) LastChange() Change { return a.history[len(a.history)-1] }

// Narrowing reports whether the search is still halving, with the
// candidates it holds and the labeled record at which its rung ends: on
// a short stream, reports say the search has not narrowed yet.
func (a *Auto) Narrowing() (halving bool, candidates int, rungEnd uint64) {
	return a.halving, len(a.cands), a.rungEnd
}

// Status is a candidate as reports show it.
type Status struct {
	Name     string  `json:"name"`
	Born     uint64  `json:"born"`     // labeled records before its first
	Mistakes uint64  `json:"mistakes"` // since its birth
	Rate     float64 `json:"rate"`     // mistakes per labeled record since its birth
	// Labeled is the labeled records since its birth: 0 for a candidate
	// born at the last one, whose Rate says nothing yet.
	Labeled  uint64 `json:"labeled"`
	Champion bool   `json:"champion,omitempty"`
	Support  int    `json:"support"`
	// Work is its learners.Outcome.Work per labeled record since its
	// birth: what Config.Cost compares.
	Work float64 `json:"work"`
	// Vote is its share of the vote (0 when the champion alone emits).
	Vote float64 `json:"vote"`
}

// Candidates are the candidates alive, in birth order.
func (a *Auto) Candidates() []Status {
	out := make([]Status, len(a.cands))
	var ws []float64
	total := 0.0
	if a.cfg.Emit == "vote" {
		ws = a.weights()
		for _, w := range ws {
			total += w
		}
	}
	for i, c := range a.cands {
		share := 0.0
		if ws != nil {
			share = ws[i] / total
		}
		n := a.labeled - c.born
		out[i] = Status{Name: c.name, Born: c.born, Mistakes: c.total, Labeled: n, Champion: i == a.champion, Support: c.l.Size(), Vote: share}
		if n > 0 {
			out[i].Rate = float64(c.total) / float64(n)
			out[i].Work = float64(c.spent) / float64(n)
		}
	}
	return out
}

// Labeled is the labeled records seen.
func (a *Auto) Labeled() uint64 { return a.labeled }

// Halving reports whether the search is still halving.
func (a *Auto) Halving() bool { return a.halving }

// Memory is the candidates' estimated peak now, which Config.Memory bounds.
func (a *Auto) Memory() int64 { return a.memory(nil) }

// round3 rounds to 3 significant digits, so that explorers' γ read well
// (0.3, not 0.30000000000000004).
func round3(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return r
}

// WriteCandidates prints candidates, one a line: the champion marked *,
// the mistake rate since its birth, its work a labeled record, its share
// of the vote, its first labeled record (1-based, as changes of champion
// are numbered) and its name.
func WriteCandidates(w io.Writer, cs []Status) {
	fmt.Fprintln(w, "candidates (mistakes and work a record since their birth, share of the vote; * the champion):")
	for _, c := range cs {
		mark := " "
		if c.Champion {
			mark = "*"
		}
		// A candidate born at the last labeled record has no rate yet:
		// "0.00 %" would read as perfect.
		rate, work, note := fmt.Sprintf("%6.2f %%", 100*c.Rate), fmtWork(c.Work), ""
		if c.Labeled == 0 {
			rate, work, note = "     new", "-", " (no labeled record since its birth)"
		}
		fmt.Fprintf(w, "  %s %s  %9s  %5.1f %%  from %d  %s%s\n", mark, rate, work, 100*c.Vote, c.Born+1, c.Name, note)
	}
}

func mistakes(n uint64) string {
	if n == 1 {
		return "1 mistake"
	}
	return strconv.FormatUint(n, 10) + " mistakes"
}

// fmtWork prints a work count in k (10³), M (10⁶) or G (10⁹).
func fmtWork(v float64) string {
	switch {
	case v >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', 1, 64) + "G"
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// benchCap bounds the bench. Each benched learner plays every record: on
// a9a the bench held about 22, and auto cost 5.2 times its champion alone
// where the search without a bench cost 4.2 (same session, farm-bench). Six, with twins going first (benchOne), keeps
// the gain: five seeds, a9a in file order 16.13 % mistakes (16.21 with
// no cap), elec2 8.06 (8.10); with four, a9a in file order 16.50.
const benchCap = 6

// benchOne keeps c, a primal PA-I candidate leaving the search, on the
// bench; one with a budget, the Perceptron, or any in a group, simply
// goes. A primal candidate costs O(nnz) a round, less than one kernel
// evaluation, so a few points of the grid of C can learn all stream long;
// cut, PA-I at a small C, which starts slowly, was lost for good at the
// first rungs (a9a in file order: auto 17.98 % mistakes, PA-I at
// C = 0.001 scaled alone 15.82). The Perceptron was recalled once in
// fifteen runs (a9a and elec2 in file order, three seeds); benched too,
// under the cap it took places from PA-I (Covertype events 15.82 against
// 15.68, a9a 16.43 against 16.36).
//
// Over benchCap, a twin goes first (benchTwin), then the one with the
// most recent mistakes. Without twins first, the first rung's cut filled
// the bench with copies (PA-I at C = 0.1, 1 and 10 on one kernel, no step
// yet capped by C, err alike) and PA-I at small C, cut a rung later with
// more recent mistakes from its slow start, was turned away at once
// (a9a in file order at a cap of 8: 16.50).
func (a *Auto) benchOne(c *cand) {
	if c.pt.budget != 0 || c.pt.learner != "pa1" || a.grouped {
		return
	}
	c.rung, c.rungWork, c.mine, c.champ, c.mineWork, c.champWork, c.w = 0, 0, 0, 0, 0, 0, 0
	a.bench = append(a.bench, c)
	for len(a.bench) > benchCap {
		j := a.benchTwin()
		if j < 0 {
			j = 0
			for i, d := range a.bench {
				if d.recent >= a.bench[j].recent {
					j = i
				}
			}
		}
		a.bench = slices.Delete(a.bench, j, j+1)
	}
}

// benchTwin is the first benched candidate with the same learner, kernel
// and scaling as another at a smaller C, and exactly as many recent
// mistakes: most likely the same model so far (PA-I whose steps C has
// not yet capped), which the smaller C keeps; -1 if none. Equal counts
// may be a coincidence; then a learner that differed goes, as it could
// have under the cap anyway.
func (a *Auto) benchTwin() int {
	for i, c := range a.bench {
		for _, d := range a.bench {
			if c.pt.c > d.pt.c && c.recent == d.recent && c.pt.learner == d.pt.learner && c.pt.kernel == d.pt.kernel && c.pt.scale == d.pt.scale {
				return i
			}
		}
	}
	return -1
}

// unbench brings bench[j] back into the search as a challenger (recall,
// or an explorer at its point): trained, its duel starts at once, without
// a warm-up; in the vote it is a newborn.
func (a *Auto) unbench(j int) {
	c := a.bench[j]
	a.bench = slices.Delete(a.bench, j, j+1)
	c.from, c.mine, c.champ, c.mineWork, c.champWork, c.w = a.labeled, 0, 0, 0, 0, 0
	a.setCands(append(slices.Clone(a.cands), c), a.cands[a.champion])
}

// recall brings back the bench's candidate with the fewest recent
// mistakes when it made fewer by more than Margin·Window than the
// champion and every primal candidate alive: in a free place, or in place
// of the primal challenger with the most, or else of the worst challenger
// other than growing's (a9a in file order, five seeds: 16.21 % mistakes,
// 16.40 when it took only a primal challenger's place). It then duels the
// champion at once, trained. Recent mistakes, not the rung's or those
// since birth, so that a slow start does not count against it for the
// whole stream. Beating the champion too, it leaves a kernel champion's
// duels alone where a kernel is best (banana: two of five seeds moved,
// the mean not lower, when it had only to beat the primal ones).
func (a *Auto) recall() {
	if len(a.bench) == 0 {
		return
	}
	b := 0
	for j, c := range a.bench {
		if c.recent < a.bench[b].recent {
			b = j
		}
	}
	out, best := -1, a.cands[a.champion].recent
	for i, c := range a.cands {
		if c.pt.budget != 0 {
			continue
		}
		best = min(best, c.recent)
		if i != a.champion && (out < 0 || c.recent > a.cands[out].recent) {
			out = i
		}
	}
	if a.bench[b].recent >= best-a.cfg.Margin*float64(a.cfg.Window) {
		return
	}
	if out < 0 && len(a.cands) >= a.cfg.Keep {
		g := a.growing()
		for i, c := range a.cands {
			if i != a.champion && c != g && (out < 0 || a.better(a.cands[out], c)) {
				out = i
			}
		}
		if out < 0 {
			return
		}
	}
	if out >= 0 {
		a.benchOne(a.cands[out])
		a.setCands(slices.Delete(slices.Clone(a.cands), out, out+1), a.cands[a.champion])
	}
	a.unbench(b) // benchOne appended after b
}
