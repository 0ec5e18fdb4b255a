package learners

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// Learner is an online binary classifier whose model is a kernel expansion
// f(x) = Σ_j α_j k(x_j, x) over a bounded active set.
//
// A Learner is not safe for concurrent use: it keeps scratch buffers between
// calls. Give each goroutine (each partition) its own.
type Learner interface {
	// Round plays one round: it computes the margin f(x) with the current
	// model and then, when y is +1 or −1, learns from (x, y). y = 0 means
	// the label is unknown: the round predicts and does not learn. The
	// returned margin is always the one computed before learning. Round
	// panics if y is not −1, 0 or +1.
	Round(x sparse.Vector, y int) Outcome
	// Predict returns f(x) and leaves the model unchanged.
	Predict(x sparse.Vector) float64
	// Size is the number of support vectors in the active set.
	Size() int
	// Budget is the most support vectors the learner will ever hold, or 0
	// when it has no bound.
	Budget() int
	// Spec is the learner's canonical spec, every parameter included
	// (defaults too), e.g. "rbp:budget=100,seed=1".
	Spec() string
	// Kernel is the kernel the learner was built with.
	Kernel() Kernel
	// MarshalBinary encodes the complete state (spec, kernel, active set,
	// weights, counters, random generator); Unmarshal restores it, and the
	// restored learner continues with bit-identical margins.
	MarshalBinary() ([]byte, error)
}

// Outcome is what one round did.
type Outcome struct {
	Margin  float64 // f(x) before learning
	Mistake bool    // the round was labeled and y·f(x) ≤ 0 (a zero margin is never right)
	Updated bool    // the model changed
	// Refused names why the record was not played at all (the model is
	// untouched and Margin is not finite): RefusedKernel or RefusedMargin.
	// Empty for every ordinary round.
	Refused string
	// Work is the round's cost, counted, not timed, so that it is the
	// same on every machine and after a restore, in units of one
	// multiply-add of a matrix update: WorkRound for the round, WorkEval
	// + WorkEntry·nnz(x) per kernel evaluation (n of them for a kernel
	// row over n support vectors), and one per multiply-add of the
	// O(n²) updates and O(n³) rebuilds of the learners that keep a matrix
	// (SOP, RBSOP, LBSOP, the Projectrons). The search of "auto" compares
	// its candidates' costs with it.
	Work uint64
}

// The weights of Outcome.Work, in multiply-adds of a matrix update, fitted
// to time by scripts/workfit (docs/auto.md): beside its kernel row a round
// took about 170 ns, a kernel evaluation 8 ns plus 1 ns a non-zero of the
// record, a multiply-add of a matrix update 0.6 ns. Counting multiply-adds
// alone made a Projectron++ on two features 29 times as costly as an RBP,
// which it is not (0.9 times).
const (
	WorkRound = 256
	WorkEval  = 16
	WorkEntry = 2
)

// Reasons a round is refused. Nothing that is not finite ever enters a
// model: a record whose kernel value with itself (or squared norm) is not
// finite or exceeds KernelLimit, or whose margin is not finite, leaves the
// model as it was.
const (
	RefusedKernel = "kernel_overflow"   // k(x,x) or ‖x‖² not finite or > KernelLimit
	RefusedMargin = "non_finite_margin" // f(x) not finite
)

// Refuses says why every learner with kernel k would refuse x
// (RefusedKernel), or "" when x is playable: what Round checks before it
// computes a margin, for callers that must know before they play several
// learners.
func (k Kernel) Refuses(x sparse.Vector) string {
	n := x.SqNorm()
	if !playable(n, k.self(n)) {
		return RefusedKernel
	}
	return ""
}

func playable(norm, self float64) bool {
	return math.Abs(self) <= KernelLimit && norm <= KernelLimit // NaN fails too
}

// KernelLimit bounds k(x,x) and ‖x‖² of a record a model plays. Below it a
// margin is a sum of at most budget terms each bounded by about
// |α|·KernelLimit, far from overflowing.
const KernelLimit = 1e100

// Info describes a learner for help texts and documentation.
type Info struct {
	Name    string
	Summary string
	Source  string // the paper that states the algorithm
	Params  []ParamInfo
}

// ParamInfo describes one parameter of a learner spec.
type ParamInfo struct{ Name, Default, Doc string }

// algorithm is the part that differs between learners: what to do with a
// labeled round, and any state beyond the active set.
type algorithm interface {
	// learn updates the model after the margin f of q was computed, with
	// m.row holding k(q, x_j) for the current active set. It reports whether
	// the model changed.
	learn(m *model, q query, f float64, y int) bool
	encode(e *encoder)
	// decode restores what encode wrote; the active set is already restored.
	decode(d *decoder, m *model)
}

type registration struct {
	info  Info
	build func(p *params, m *model, seed uint64) algorithm
}

var registry = map[string]registration{}

func register(r registration) { registry[r.info.Name] = r }

// Available lists the learners, sorted by name.
func Available() []Info {
	out := make([]Info, 0, len(registry))
	for _, r := range registry {
		out = append(out, r.info)
	}
	for _, c := range composites {
		out = append(out, c.Info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// New builds a learner from a spec such as "forgetron:budget=100". seed
// seeds a randomized learner unless the spec sets seed= itself; the seed in
// use is part of the canonical spec.
func New(spec string, k Kernel, seed uint64) (Learner, error) {
	sp, err := ParseSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("learner: %w", err)
	}
	if c, ok := composites[sp.Name]; ok {
		if k.Kind < Linear || k.Kind > RBF {
			return nil, fmt.Errorf("learner %s: invalid kernel", sp.Name)
		}
		l, err := c.New(sp, k, seed)
		if err != nil {
			return nil, fmt.Errorf("learner: %w", err)
		}
		return l, nil
	}
	return newFromSpec(sp, k, seed)
}

func newFromSpec(sp Spec, k Kernel, seed uint64) (*model, error) {
	if k.Kind < Linear || k.Kind > RBF {
		return nil, fmt.Errorf("learner %s: invalid kernel", sp.Name)
	}
	r, ok := registry[sp.Name]
	if !ok {
		return nil, fmt.Errorf("learner %q: unknown (available: %s)", sp.Name, strings.Join(names(), ", "))
	}
	m := &model{sv: supportSet{kern: k}}
	p := newParams(sp)
	m.alg = r.build(p, m, seed)
	if err := p.done(); err != nil {
		return nil, fmt.Errorf("learner: %w", err)
	}
	m.spec = p.canonical().String()
	m.primal = newPrimal(m)
	if m.budget > 0 {
		m.sv.room = m.budget + 1
	}
	return m, nil
}

// model is the one Learner implementation: the shared round logic around an
// algorithm.
type model struct {
	spec   string
	sv     supportSet
	budget int
	rounds uint64 // rounds played, labeled or not; a support vector's birth date
	row    []float64
	alg    algorithm
	// primal, when set, holds the model as a weight vector and sv stays
	// empty (see primalForm).
	primal *primalForm
}

func (m *model) Round(x sparse.Vector, y int) Outcome {
	return m.roundNorm(x, x.SqNorm(), y)
}

// RoundNorm is l.Round(x, y) for a caller that has x's squared norm n
// already, as x.SqNorm() computes it: a search that plays many learners
// on each record (auto) computes it once, not once a learner. With those
// bits the outcome is Round's; a learner that is not a model plays Round.
func RoundNorm(l Learner, x sparse.Vector, n float64, y int) Outcome {
	if m, ok := l.(*model); ok {
		return m.roundNorm(x, n, y)
	}
	return l.Round(x, y)
}

// roundNorm is Round for x of squared norm n.
func (m *model) roundNorm(x sparse.Vector, n float64, y int) Outcome {
	if y < -1 || y > 1 {
		panic(fmt.Sprintf("learners: label %d is not −1, 0 or +1", y))
	}
	w0 := m.sv.work
	out := m.round(m.sv.queryNorm(x, n), y)
	out.Work = WorkRound + m.sv.work - w0
	return out
}

func (m *model) round(q query, y int) Outcome {
	if !playable(q.norm, q.self) {
		return Outcome{Margin: math.NaN(), Refused: RefusedKernel}
	}
	f := m.margin(q)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Outcome{Margin: f, Refused: RefusedMargin}
	}
	m.rounds++
	out := Outcome{Margin: f}
	if y == 0 {
		return out
	}
	out.Mistake = float64(y)*f <= 0
	out.Updated = m.alg.learn(m, q, f, y)
	return out
}

func (m *model) Predict(x sparse.Vector) float64 {
	return m.margin(m.sv.newQuery(x))
}

// margin is f(q); in the dual form it leaves q's kernel row in m.row for
// the algorithm.
func (m *model) margin(q query) float64 {
	if m.primal != nil {
		// One kernel evaluation's worth of work: a dot product with w.
		m.sv.work += WorkEval + WorkEntry*uint64(len(q.x.Idx))
		return m.primal.margin(q.x)
	}
	m.row = m.sv.row(q, m.row)
	return m.sv.margin(m.row)
}

// add adds q with label y and weight alpha to the model.
func (m *model) add(q query, y int, alpha float64) {
	if m.primal != nil {
		m.primal.add(q.x, alpha)
		return
	}
	m.sv.add(q, y, alpha, m.rounds)
}

// Size is the support size; in the primal form, the number of vectors
// folded into w, which is what the dual form would hold.
func (m *model) Size() int {
	if m.primal != nil {
		return m.primal.n
	}
	return m.sv.len()
}
func (m *model) Budget() int    { return m.budget }
func (m *model) Spec() string   { return m.spec }
func (m *model) Kernel() Kernel { return m.sv.kern }

func (m *model) MarshalBinary() ([]byte, error) {
	return m.AppendBinary(make([]byte, 0, 64+m.sv.len()*32))
}

// AppendBinary appends MarshalBinary's bytes to b, so that a partition's
// snapshot encodes its learners in one buffer rather than each in its own
// grown buffer, then copied.
func (m *model) AppendBinary(b []byte) ([]byte, error) {
	return m.appendState(b, m.spec), nil
}

// appendState appends the state, naming spec as the learner's.
func (m *model) appendState(b []byte, spec string) []byte {
	e := &encoder{b: b}
	e.b = append(e.b, stateMagic...)
	if m.primal != nil {
		e.uvarint(statePrimal)
	} else {
		e.uvarint(stateVersion)
	}
	e.string(spec)
	e.string(m.sv.kern.String())
	e.uvarint(m.rounds)
	if m.primal != nil {
		m.primal.encode(e)
	} else {
		e.uvarint(uint64(m.sv.len()))
	}
	for j := range m.sv.len() {
		e.uvarint(m.sv.born[j])
		e.float(m.sv.alpha[j])
		e.uvarint(uint64(m.sv.label[j] + 1)) // 0 or 2
		e.vector(m.sv.vec(j))
	}
	extra := &encoder{}
	m.alg.encode(extra)
	e.bytes(extra.b)
	return e.b
}

// WithBudget returns a copy of l, trained as it is, whose budget (budget=,
// or max= for a learner capped with it) is budget, at least l's: it
// continues exactly as l would until l's active set, full, would lose a
// support vector that the copy keeps — except Projectron++ given budget=
// alone, whose budget also sets u, its bound on the weights' norm. This
// is how a search tries a larger budget without learning the stream again
// from its start. l is not changed. It fails for a learner without a
// budget, or a smaller budget.
func WithBudget(l Learner, budget int) (Learner, error) {
	m, ok := l.(*model)
	if !ok || m.budget == 0 {
		return nil, fmt.Errorf("learner %s: no budget to change", l.Spec())
	}
	if budget < m.budget {
		return nil, fmt.Errorf("learner %s: budget %d is below its %d", m.spec, budget, m.budget)
	}
	sp, err := ParseSpec(m.spec)
	if err != nil {
		return nil, fmt.Errorf("learner %s: %w", m.spec, err)
	}
	old, b := strconv.Itoa(m.budget), strconv.Itoa(budget)
	for _, key := range []string{"budget", "max"} {
		// Projectron++ has both; its max= is the budget unless set lower.
		if sp.Params[key] == old {
			sp.Params[key] = b
		}
	}
	c, err := unmarshal(m.appendState(nil, sp.String()))
	if err != nil {
		return nil, fmt.Errorf("learner %s at budget %d: %w", m.spec, budget, err)
	}
	if c.budget != budget {
		return nil, fmt.Errorf("learner %s: its budget is not budget= or max=", m.spec)
	}
	return c, nil
}

// Unmarshal rebuilds a learner from MarshalBinary's output. Malformed input
// gives an error wrapping ErrCorrupt; a state from a newer format version
// gives an error naming the version.
func Unmarshal(data []byte) (Learner, error) {
	if c, ok := compositeByMagic(data); ok {
		l, err := c.Decode(data)
		if err != nil {
			return nil, fmt.Errorf("decode learner state: %w", err)
		}
		return l, nil
	}
	m, err := unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("decode learner state: %w", err)
	}
	return m, nil
}

func unmarshal(data []byte) (*model, error) {
	if len(data) < len(stateMagic) || string(data[:len(stateMagic)]) != stateMagic {
		return nil, fmt.Errorf("%w: not a learner state (bad magic)", ErrCorrupt)
	}
	d := &decoder{b: data[len(stateMagic):]}
	v := d.uvarint("version")
	if d.err == nil && v != stateVersion && v != statePrimal {
		return nil, fmt.Errorf("learner state format version %d not supported (this build reads %d and %d)", v, stateVersion, statePrimal)
	}
	specStr, kernStr := d.string("spec"), d.string("kernel")
	if d.err != nil {
		return nil, d.err
	}
	sp, err := ParseSpec(specStr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	k, err := ParseKernel(kernStr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	m, err := newFromSpec(sp, k, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	m.rounds = d.uvarint("rounds")
	if err := m.decodeSet(d, v == statePrimal); err != nil {
		return nil, err
	}
	extra := &decoder{b: d.bytes("learner section")}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(d.b))
	}
	m.alg.decode(extra, m)
	if extra.err != nil {
		return nil, extra.err
	}
	if len(extra.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes in learner section", ErrCorrupt, len(extra.b))
	}
	return m, nil
}

// decodeSet restores the support set, or the weight vector of a primal
// state (primal).
func (m *model) decodeSet(d *decoder, primal bool) error {
	if primal {
		if m.primal == nil {
			return fmt.Errorf("%w: a primal state for %s with %s, which keeps support vectors", ErrCorrupt, m.spec, m.sv.kern)
		}
		return m.primal.decode(d)
	}
	n := d.count("support set size", 11)
	if m.budget > 0 && n > m.budget {
		return fmt.Errorf("%w: %d support vectors exceed the budget %d", ErrCorrupt, n, m.budget)
	}
	if m.primal == nil {
		m.sv.reserve(n, d.entries(n))
	}
	m.sv.restoring = true
	var x sparse.Vector // the set copies it: one buffer serves every vector
	for range n {
		born := d.uvarint("birth round")
		alpha := d.float("weight")
		label := int(d.uvarint("label")) - 1
		x = d.vectorIn(x)
		if d.err != nil {
			return d.err
		}
		if label != 1 && label != -1 {
			return fmt.Errorf("%w: label %d", ErrCorrupt, label)
		}
		if math.IsNaN(alpha) || math.IsInf(alpha, 0) {
			return fmt.Errorf("%w: weight %v", ErrCorrupt, alpha)
		}
		if m.primal != nil {
			// A dual state of a learner now kept in primal form: its
			// vectors fold into w in their order, as they were added.
			m.primal.add(x, alpha)
			continue
		}
		m.sv.add(m.sv.newQuery(x), label, alpha, born)
	}
	m.sv.restoring = false
	m.sv.chooseLayout()
	return nil
}

// budgetParam reads the budget of a learner that needs one.
func budgetParam(p *params, m *model) {
	m.budget = p.int("budget", 100, 1, 1<<24)
}

// capParam reads max=, the optional hard cap of a learner that has no
// budget in its paper: 0 keeps it unbounded, N > 0 removes the oldest
// support vector when an update would exceed N.
func capParam(p *params, m *model) {
	m.budget = p.int("max", 0, 0, 1<<24)
}

// makeRoom removes the oldest support vector when the active set is at the
// cap, before an insertion.
func (m *model) makeRoom() {
	if m.budget > 0 && m.sv.len() >= m.budget {
		m.sv.remove(0)
	}
}
