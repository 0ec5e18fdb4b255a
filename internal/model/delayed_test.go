package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/internal/pending"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/prequential"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

func delayed(cfg Config, p pending.Config) Config {
	cfg.Delayed = &p
	return cfg
}

func key(i int) []byte { return []byte(fmt.Sprint("k", i)) }

// A label revealed at once — Hold, then Resolve — is the usual step: the
// same margins record for record, the same evaluators (every learner's),
// the same champion switches.
func TestZeroDelayIsTheUsualStep(t *testing.T) {
	cases := append(candidateCases(t), struct {
		name string
		cfg  Config
		data string
	}{"binary records", Config{Learner: "forgetron:budget=30", Kernel: kernel(t, "rbf:gamma=0.05"), Seed: 3}, "../../testdata/a9a.gz"})
	for _, c := range cases {
		recs := lines(t, c.data, 800)
		a := build(t, c.cfg)
		b := build(t, delayed(c.cfg, pending.Config{MaxRecords: 1}))
		for i, rec := range recs {
			ra, err := a.Step(rec)
			if err != nil {
				t.Fatal(err)
			}
			hb, label, err := b.Hold(rec, key(i), At{Offset: int64(i)})
			if err != nil {
				t.Fatal(err)
			}
			if math.Float64bits(ra.Margin) != math.Float64bits(hb.Margin) || ra.Predicted != hb.Predicted || !hb.Held {
				t.Fatalf("%s record %d: held %+v, stepped %+v", c.name, i, hb, ra)
			}
			rb, err := b.Resolve(key(i), label, At{Offset: int64(i) + 1})
			if err != nil {
				t.Fatal(err)
			}
			if !rb.Late || rb.LateOffset != int64(i) || rb.Mistake != ra.Mistake || rb.Mistakes != ra.Mistakes || rb.Switched != ra.Switched ||
				rb.To != ra.To || rb.Label != ra.Label || math.Float64bits(rb.Margin) != math.Float64bits(ra.Margin) {
				t.Fatalf("%s record %d: resolved %+v, stepped %+v", c.name, i, rb, ra)
			}
		}
		for i := range a.Candidates() {
			ea, _ := a.CandidateEval(i).MarshalBinary()
			eb, _ := b.CandidateEval(i).MarshalBinary()
			if !bytes.Equal(ea, eb) {
				t.Fatalf("%s: learner %d's evaluator differs: %+v vs %+v", c.name, i, *a.CandidateEval(i), *b.CandidateEval(i))
			}
		}
		ea, _ := a.Eval().MarshalBinary()
		eb, _ := b.Eval().MarshalBinary()
		if !bytes.Equal(ea, eb) || a.Eval().Labeled != uint64(len(recs)) {
			t.Fatalf("%s: evaluators differ: %+v vs %+v", c.name, *a.Eval(), *b.Eval())
		}
		if b.Pending().Len() != 0 {
			t.Fatalf("%s: %d records still pending", c.name, b.Pending().Len())
		}
	}
}

// With labels N records late the model learns each record when its label
// comes, on the model as it is then, and scores the prediction it emitted
// when the record came — checked against a learner driven by hand.
func TestDelayScoresTheEmittedPrediction(t *testing.T) {
	recs := lines(t, "../../testdata/a9a.gz", 1500)
	k := kernel(t, "rbf:gamma=0.05")
	for _, delay := range []int{1, 10, 200} {
		m := build(t, delayed(Config{Learner: "perceptron", Kernel: k, Seed: 1}, pending.Config{MaxRecords: delay + 1}))
		l, _ := learners.New("perceptron", k, 1)
		type held struct {
			x sparse.Vector
			y int
			f float64
		}
		var queue []held
		var labels [][]byte
		mistakes := 0
		for i, rec := range recs {
			ex, err := codec.Decode(rec, codec.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			y, _, _ := codec.LabelMap{}.Map(ex.Label)
			f := l.Round(ex.X, 0).Margin
			queue = append(queue, held{ex.X, y, f})
			r, label, err := m.Hold(rec, key(i), At{})
			if err != nil || math.Float64bits(r.Margin) != math.Float64bits(f) {
				t.Fatalf("delay %d record %d: margin %v (%v), by hand %v", delay, i, r.Margin, err, f)
			}
			labels = append(labels, label)
			if i < delay {
				continue
			}
			h := queue[0]
			queue = queue[1:]
			l.Round(h.x, h.y)
			want := prequential.IsMistake(h.f, h.y)
			if want {
				mistakes++
			}
			j := i - delay
			r, err = m.Resolve(key(j), labels[j], At{})
			if err != nil || r.Mistake != want || r.Margin != h.f || r.Label != h.y {
				t.Fatalf("delay %d: label of %d: %+v (%v), by hand mistake %v margin %v", delay, j, r, err, want, h.f)
			}
		}
		if ev := m.Eval(); ev.Mistakes != uint64(mistakes) || ev.Labeled != uint64(len(recs)-delay) || ev.Rounds != uint64(len(recs)) {
			t.Fatalf("delay %d: evaluator %d/%d of %d rounds, by hand %d/%d", delay, ev.Mistakes, ev.Labeled, ev.Rounds, mistakes, len(recs)-delay)
		}
		if m.Pending().Len() != delay {
			t.Fatalf("delay %d: %d pending", delay, m.Pending().Len())
		}
	}
}

func reasonOf(err error) codec.Reason {
	var ce *codec.Error
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return ""
}

// Label messages through StepAt: each kind of message and each refusal.
func TestLabelMessages(t *testing.T) {
	cfg := Config{Learner: "perceptron", Kernel: kernel(t, "rbf:gamma=0.5"), Seed: 1, Events: true,
		Event: codec.EventConfig{LabelField: "label", KeyField: "id"}}
	m := build(t, delayed(cfg, pending.Config{MaxRecords: 3, MaxAge: 1000}))
	step := func(s string, at At) (Result, error) {
		t.Helper()
		return m.StepAt([]byte(s), at)
	}
	snap := func() []byte {
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Learn one record so that predictions are not all zero.
	if r, err := step(`{"id":"t","x":1,"label":1}`, At{Time: 0}); err != nil || !r.Labeled || r.Held || r.Late {
		t.Fatalf("a labeled record: %+v %v", r, err)
	}
	r, err := step(`{"id":"a","x":1.1}`, At{Time: 100, Offset: 1})
	if err != nil || !r.Held || r.Labeled || string(r.Key) != "a" || m.Pending().Len() != 1 {
		t.Fatalf("a record awaiting its label: %+v %v", r, err)
	}
	emitted := r.Margin
	r, err = step(`{"id":"a","label":-1}`, At{Time: 350, Offset: 2})
	if err != nil || !r.Late || !r.Labeled || r.LateOffset != 1 || r.Delay != 250 || r.Margin != emitted || r.Label != -1 ||
		r.Mistake != prequential.IsMistake(emitted, -1) || m.Pending().Len() != 0 {
		t.Fatalf("its label: %+v %v (emitted margin %v)", r, err, emitted)
	}
	if ev := m.Eval(); ev.Rounds != 2 || ev.Labeled != 2 {
		t.Fatalf("evaluator: %d rounds, %d labeled; want 2, 2", ev.Rounds, ev.Labeled)
	}
	refused := func(msg string, at At, want codec.Reason) {
		t.Helper()
		before := snap()
		r, err := step(msg, at)
		if got := reasonOf(err); got != want {
			t.Fatalf("%s: %+v, %v; want %s", msg, r, err, want)
		}
		if !bytes.Equal(before, snap()) {
			t.Fatalf("%s: a refused label changed the model", msg)
		}
	}
	refused(`{"id":"a","label":1}`, At{Time: 400}, codec.ReasonLabelUnknown) // labeled already
	refused(`{"id":"zz","label":1}`, At{Time: 400}, codec.ReasonLabelUnknown)
	refused(`{"label":1}`, At{Time: 400}, codec.ReasonLabelNoKey)
	refused(`{"id":"q"}`, At{Time: 400}, codec.ReasonBadLabel)
	for i, id := range []string{"b", "c", "d", "e"} { // b is evicted by e
		if r, err := step(`{"id":"`+id+`","x":2}`, At{Time: 500 + int64(i)}); err != nil || !r.Held {
			t.Fatalf("%s: %+v %v", id, r, err)
		}
	}
	if m.Pending().Len() != 3 || m.Pending().Evicted != 1 {
		t.Fatalf("%d pending, %d evicted; bound 3", m.Pending().Len(), m.Pending().Evicted)
	}
	refused(`{"id":"b","label":1}`, At{Time: 600}, codec.ReasonLabelEvicted)
	// The Kafka key stands in for a missing key field.
	if r, err := step(`{"x":3}`, At{Key: []byte("f"), Time: 1400}); err != nil || !r.Held || r.Expired != 0 {
		t.Fatalf("a record keyed by its message: %+v %v", r, err)
	}
	// f evicted c; at 1,600 ms d and e (502, 503 ms) are over 1 s old.
	r, err = step(`{"label":1}`, At{Key: []byte("f"), Time: 1600})
	if err != nil || !r.Late || r.Expired != 2 || m.Pending().Len() != 0 || m.Pending().Expired != 2 || m.Pending().Evicted != 2 {
		t.Fatalf("a label keyed by its message: %+v %v, %d pending", r, err, m.Pending().Len())
	}
	refused(`{"id":"c","label":1}`, At{Time: 1700}, codec.ReasonLabelEvicted)
	refused(`{"id":"d","label":1}`, At{Time: 1700}, codec.ReasonLabelExpired)
	// Records (not events) read a label-only record as a label.
	rm := build(t, delayed(Config{Learner: "perceptron", Kernel: kernel(t, "linear")}, pending.Config{}))
	if r, err := rm.StepAt([]byte("3:1 7:0.5"), At{Key: []byte("r1")}); err != nil || !r.Held {
		t.Fatalf("an unlabeled LIBSVM record: %+v %v", r, err)
	}
	if r, err := rm.StepAt([]byte(`{"label":1}`), At{Key: []byte("r1")}); err != nil || !r.Late || r.Label != 1 {
		t.Fatalf("a JSON label: %+v %v", r, err)
	}
	if r, err := rm.StepAt([]byte("-1"), At{Key: []byte("r1")}); reasonOf(err) != codec.ReasonLabelUnknown {
		t.Fatalf("a LIBSVM label for a labeled record: %+v %v", r, err)
	}
	// Without delayed labels, a label-only record is what it always was.
	plain := build(t, Config{Learner: "perceptron", Kernel: kernel(t, "linear")})
	if _, err := plain.StepAt([]byte("-1"), At{Key: []byte("r1")}); reasonOf(err) != codec.ReasonEmptyFeatures {
		t.Fatalf("a label-only record without delayed labels: %v", err)
	}
}

// splitEvent turns a labeled event into the record without its label and
// the label message, both keyed by the event's id.
func splitEvent(t testing.TB, b []byte, labelField string) (rec, label []byte) {
	t.Helper()
	var ev map[string]json.RawMessage
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	lab := map[string]json.RawMessage{"id": ev["id"], labelField: ev[labelField]}
	delete(ev, labelField)
	rec, _ = json.Marshal(ev)
	label, _ = json.Marshal(lab)
	return rec, label
}

// A delayed-label model cut at random points — labels in flight, some
// late past the store's bounds, some for nothing — continues bit for bit:
// challengers, classes discovered online and the scaler included.
func TestDelayedSnapshotContinues(t *testing.T) {
	c := candidateCases(t)[1]
	cfg := delayed(c.cfg, pending.Config{MaxRecords: 200, MaxAge: 1000})
	recs := lines(t, c.data, 900)
	type msg struct {
		b  []byte
		at At
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	var msgs []msg
	due := map[int][][]byte{} // record index → labels sent just before it
	for i, b := range recs {
		rec, label := splitEvent(t, b, "Cover_Type")
		for _, l := range due[i] {
			msgs = append(msgs, msg{l, At{Time: int64(10 * len(msgs))}})
		}
		msgs = append(msgs, msg{rec, At{Time: int64(10 * len(msgs)), Offset: int64(len(msgs))}})
		switch d := rnd.IntN(100); {
		case d < 80:
			at := i + 1 + rnd.IntN(50)
			due[at] = append(due[at], label)
		case d < 85:
			due[i+150] = append(due[i+150], label) // expired by then
		case d < 90:
			msgs = append(msgs, msg{[]byte(fmt.Sprintf(`{"id":"nobody-%d","Cover_Type":2}`, i)), At{Time: int64(10 * len(msgs))}})
		}
	}
	type out struct {
		r   Result
		err string
	}
	play := func(m *Model, from int) []out {
		var outs []out
		for _, ms := range msgs[from:] {
			r, err := m.StepAt(ms.b, ms.at)
			o := out{r: r}
			if err != nil {
				o.err = string(reasonOf(err))
			}
			o.r.Key, o.r.Margins = nil, nil
			outs = append(outs, o)
			if m.Pending().Len() > 200 {
				t.Fatalf("%d pending, bound 200", m.Pending().Len())
			}
		}
		return outs
	}
	straight := build(t, cfg)
	want := play(straight, 0)
	count := map[string]int{}
	for _, o := range want {
		switch {
		case o.err != "":
			count[o.err]++
		case o.r.Late:
			count["late"]++
		case o.r.Held:
			count["held"]++
		}
	}
	if count["late"] < 500 || count["label_unknown"] == 0 || count["label_expired"]+count["label_evicted"] == 0 || straight.Selector().Switches() == 0 {
		t.Fatalf("the stream exercised too little: %v, %d switches", count, straight.Selector().Switches())
	}
	final, _ := straight.MarshalBinary()
	for _, cut := range []int{1, 137, 500, 811, len(msgs) - 3} {
		m := build(t, cfg)
		for _, ms := range msgs[:cut] {
			m.StepAt(ms.b, ms.at)
		}
		snap, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Unmarshal(snap)
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		got := play(back, cut)
		for i := range got {
			a, b := got[i], want[cut+i]
			if a.err != b.err || fmt.Sprintf("%+v", a.r) != fmt.Sprintf("%+v", b.r) {
				t.Fatalf("cut %d, message %d after: %+v / straight %+v", cut, i, a, b)
			}
		}
		if end, _ := back.MarshalBinary(); !bytes.Equal(end, final) {
			t.Fatalf("cut %d: final states differ", cut)
		}
	}
	t.Logf("%v", count)
}

// The snapshot of a delayed-label model is format 3; a damaged pending
// section is refused, not half-restored.
func TestDelayedSnapshotFormat(t *testing.T) {
	m := build(t, delayed(Config{Learner: "rbp:budget=5", Kernel: kernel(t, "rbf:gamma=0.1"), Events: true,
		Event: codec.EventConfig{KeyField: "id"}, Features: features.Config{HashBits: 10}}, pending.Config{MaxRecords: 7, MaxAge: 9}))
	for i := range 5 {
		if _, err := m.StepAt([]byte(fmt.Sprintf(`{"id":"%d","x":%d}`, i, i+1)), At{Time: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	snap, _ := m.MarshalBinary()
	if snap[len(snapshotMagic)] != 3 {
		t.Fatalf("format %d", snap[len(snapshotMagic)])
	}
	back, err := Unmarshal(snap)
	if err != nil || back.Pending().Len() != 5 || back.Config().Delayed.MaxRecords != 7 || back.Config().Delayed.MaxAge != 9 {
		t.Fatalf("restored: %v", err)
	}
	for cut := len(snap) - 5; cut > len(snap)-40; cut-- {
		bad := bytes.Clone(snap)
		bad[cut] ^= 0x40
		if _, err := Unmarshal(bad); err == nil {
			t.Fatalf("a snapshot damaged at byte %d restored", cut)
		}
	}
}

// A Delayer of N is Hold and Resolve N records apart, every label scored
// once Flush has run; N = 0 is the usual step.
func TestDelayer(t *testing.T) {
	c := candidateCases(t)[1]
	recs := lines(t, c.data, 700)
	for _, n := range []int{0, 1, 37} {
		d := build(t, delayed(c.cfg, *DelayConfig(n)))
		dl, err := NewDelayer(d, n)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, b := range recs {
			if err := dl.Step(b, func(r Result) { r.Key, r.Margins = nil, nil; got = append(got, fmt.Sprintf("%+v", r)) }); err != nil {
				t.Fatal(err)
			}
		}
		if err := dl.Flush(func(r Result) { r.Key, r.Margins = nil, nil; got = append(got, fmt.Sprintf("%+v", r)) }); err != nil {
			t.Fatal(err)
		}
		m := build(t, delayed(c.cfg, *DelayConfig(n)))
		var want []string
		var labels [][]byte
		resolve := func(j int) {
			r, err := m.Resolve(key(j), labels[j], At{Offset: int64(min(j+n+1, len(recs)))})
			if err != nil {
				t.Fatal(err)
			}
			r.Key, r.Margins, r.LateOffset = nil, nil, int64(j)
			want = append(want, fmt.Sprintf("%+v", r))
		}
		for i, b := range recs {
			r, label, err := m.Hold(b, key(i), At{Offset: int64(i)})
			if err != nil {
				t.Fatal(err)
			}
			r.Key, r.Margins = nil, nil
			want = append(want, fmt.Sprintf("%+v", r))
			labels = append(labels, label)
			if i >= n {
				resolve(i - n)
			}
		}
		for j := len(recs) - n; j < len(recs); j++ {
			resolve(j)
		}
		if len(got) != 2*len(recs) || d.Eval().Labeled != uint64(len(recs)) {
			t.Fatalf("delay %d: %d results, %d labeled, for %d records", n, len(got), d.Eval().Labeled, len(recs))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("delay %d, result %d: %s\nby hand: %s", n, i, got[i], want[i])
			}
		}
		if n == 0 {
			plain := build(t, c.cfg)
			for _, b := range recs {
				plain.Step(b)
			}
			a, _ := plain.Eval().MarshalBinary()
			b, _ := d.Eval().MarshalBinary()
			if !bytes.Equal(a, b) {
				t.Fatal("delay 0: the evaluator differs from the usual step's")
			}
		}
	}
	if _, err := NewDelayer(build(t, c.cfg), 3); err == nil {
		t.Fatal("a Delayer on a model without a pending store")
	}
}

// A message from a label topic must be a label: one with features is
// refused, not predicted.
func TestLabelTopicTakesLabelsOnly(t *testing.T) {
	m := build(t, delayed(Config{Learner: "perceptron", Kernel: kernel(t, "linear")}, pending.Config{}))
	if _, err := m.StepAt([]byte("3:1"), At{Key: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	before, _ := m.MarshalBinary()
	if _, err := m.StepAt([]byte("+1 3:1"), At{Key: []byte("a"), LabelTopic: true}); reasonOf(err) != codec.ReasonBadLabel {
		t.Fatalf("a record in the label topic: %v", err)
	}
	if after, _ := m.MarshalBinary(); !bytes.Equal(before, after) {
		t.Fatal("a refused message changed the model")
	}
	if r, err := m.StepAt([]byte("+1"), At{Key: []byte("a"), LabelTopic: true}); err != nil || !r.Late {
		t.Fatalf("a label in the label topic: %+v %v", r, err)
	}
}
