package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/streamlearner/streamlearner/learners/autolearn"
	"github.com/streamlearner/streamlearner/learners/drift"
	"github.com/streamlearner/streamlearner/learners/prequential"
)

// Report is what a replay found, per partition and per learner. Rates are
// fractions in [0, 1].
type Report struct {
	Topic          string  `json:"topic,omitempty"`
	Kernel         string  `json:"kernel"`
	Seed           uint64  `json:"seed"`
	Window         int     `json:"window"`
	RecoveryWindow int     `json:"recovery_window"`
	Tolerance      float64 `json:"tolerance"`
	// LabelTopic is the topic the labels came from, when not Topic.
	LabelTopic string            `json:"label_topic,omitempty"`
	Partitions []PartitionReport `json:"partitions"`
	// Learners sums every partition, in Config order.
	Learners []Summary `json:"learners"`
}

// PartitionReport is one partition's stream.
type PartitionReport struct {
	Partition   int              `json:"partition"`
	FirstOffset int64            `json:"first_offset"`
	LastOffset  int64            `json:"last_offset"`
	Rounds      int64            `json:"rounds"`
	Bad         map[string]int64 `json:"bad_records,omitempty"`
	// LabelRecords is the number of records read from the label topic
	// (their offsets are that topic's, not in First/LastOffset).
	LabelRecords int64           `json:"label_topic_records,omitempty"`
	Shifts       []Shift         `json:"shifts"`
	Learners     []LearnerReport `json:"learners"`
}

// Summary is one learner over all partitions. Its prequential.Summary
// sums the partitions: Labeled, the mistakes and the baseline's, and the
// confusion matrices and unanswered rounds class by class; Kappa,
// Accuracy (1 − MistakeRate), MacroF1 and Recall are computed from that
// sum, over every labeled round. The baseline is each partition's
// majority class so far.
type Summary struct {
	Spec     string `json:"spec"`
	Mistakes uint64 `json:"mistakes"`
	prequential.Summary
	// MeanRecovery is the mean of the recoveries that happened (records;
	// one decided by its first window, Recovery.AtMost, counts as its
	// bound), Recovered/Shifts how many did.
	MeanRecovery float64 `json:"mean_recovery"`
	Recovered    int     `json:"recovered"`
	Shifts       int     `json:"shifts"`
	// Selector marks the selection's row (Config.Select), Switches its
	// champion changes summed over partitions.
	Selector bool   `json:"selector,omitempty"`
	Switches uint64 `json:"switches,omitempty"`
	// Labels sums the partitions' delayed-label counts (nil without).
	Labels *DelayedLabels `json:"delayed_labels,omitempty"`
}

// ChampionChange is an auto learner's change of configuration, decided at
// a round: Name is champion from labeled record From on (numbered as eval,
// checkpoint inspect and run's log number it), for the reason Why.
type ChampionChange struct {
	Round int64          `json:"round"`
	From  uint64         `json:"from"`
	Name  string         `json:"name"`
	Why   *autolearn.Why `json:"why,omitempty"`
}

// LearnerReport is one learner on one partition.
type LearnerReport struct {
	Spec             string  `json:"spec"`
	Seed             uint64  `json:"seed"`
	Rounds           uint64  `json:"rounds"`
	Mistakes         uint64  `json:"mistakes"`
	Updates          uint64  `json:"updates"`
	WindowRate       float64 `json:"window_rate"`
	BaselineMistakes uint64  `json:"baseline_mistakes"`
	prequential.Summary
	// Failed counts records the model refused, by reason; empty unless the
	// stream's own checks missed one.
	Failed map[string]int64 `json:"failed,omitempty"`
	// Labels is what became of held records and late labels, with labels
	// that come late (Config.Delay or Config.Model.Delayed); nil otherwise.
	Labels            *DelayedLabels   `json:"delayed_labels,omitempty"`
	Support           int              `json:"support"`
	SupportMax        int              `json:"support_max"`
	ExamplesPerSecond float64          `json:"examples_per_second"`
	Segments          []SegmentStats   `json:"segments"`
	Recovery          []Recovery       `json:"recovery"`
	Detectors         []DetectorReport `json:"detectors"`
	Trace             []TracePoint     `json:"trace"`
	// Champions are an auto learner's changes of configuration (the
	// first 1,000): from Round on, Name's predictions were emitted.
	// Candidates are its candidates at the end, with their mistake rates
	// since their birth; Reopens counts the rises of its mistake rate
	// that reopened its search.
	Champions  []ChampionChange   `json:"champions,omitempty"`
	Candidates []autolearn.Status `json:"candidates,omitempty"`
	Reopens    uint64             `json:"reopens,omitempty"`
	// ChampionChanges counts every change of champion, Champions the
	// first 1,000. Halving is set when the search had not narrowed yet at
	// the end, NextCut the labeled record of its next halving.
	ChampionChanges int    `json:"champion_changes,omitempty"`
	Halving         bool   `json:"halving,omitempty"`
	NextCut         uint64 `json:"next_cut,omitempty"`
	// Selector marks the selection's row (Config.Select): its rates are
	// the emitted predictions', Support every learner's, Switches its
	// champion changes and Champion the learner it ended with (an index
	// into the rows before it).
	Selector bool   `json:"selector,omitempty"`
	Switches uint64 `json:"switches,omitempty"`
	Champion int    `json:"champion,omitempty"`
}

// DelayedLabels counts, for one learner on one partition, the records
// predicted and held for a label to come and what became of them.
type DelayedLabels struct {
	// Held records were predicted and waited for their label; Late labels
	// found their record, which was then learned and its emitted
	// prediction scored.
	Held uint64 `json:"held"`
	Late uint64 `json:"late"`
	// Pending records still awaited their label at the end; Evicted ones
	// left a full store, Expired ones outlived the store's max age and
	// Replaced ones were followed by another record of the same key, all
	// unlearned.
	Pending  int    `json:"pending"`
	Evicted  uint64 `json:"evicted"`
	Expired  uint64 `json:"expired"`
	Replaced uint64 `json:"replaced"`
	// Refused counts label messages refused by reason (label_unknown,
	// label_expired, label_evicted, label_without_key): the orphan labels
	// the service dead-letters. They change nothing and the replay goes on.
	Refused map[string]int64 `json:"refused,omitempty"`
}

// add returns the sum of d and e, either of which may be nil.
func (d *DelayedLabels) add(e *DelayedLabels) *DelayedLabels {
	if e == nil {
		return d
	}
	sum := DelayedLabels{}
	if d != nil {
		sum = *d
		sum.Refused = maps.Clone(d.Refused)
	}
	sum.Held += e.Held
	sum.Late += e.Late
	sum.Pending += e.Pending
	sum.Evicted += e.Evicted
	sum.Expired += e.Expired
	sum.Replaced += e.Replaced
	for k, v := range e.Refused {
		if sum.Refused == nil {
			sum.Refused = map[string]int64{}
		}
		sum.Refused[k] += v
	}
	return &sum
}

// String is the counts in a line, refusals by reason in a fixed order.
func (d *DelayedLabels) String() string {
	s := fmt.Sprintf("%d held, %d late, %d pending, %d evicted, %d expired, %d replaced", d.Held, d.Late, d.Pending, d.Evicted, d.Expired, d.Replaced)
	for _, k := range slices.Sorted(maps.Keys(d.Refused)) {
		s += fmt.Sprintf(", %d %s", d.Refused[k], k)
	}
	return s
}

// Status says why a learner report has no rates: "no records" for a
// partition with nothing in the replayed range, "no labels" when none of
// its records was labeled, and "" otherwise.
func (l LearnerReport) Status() string {
	switch {
	case l.Rounds == 0:
		return "no records"
	case l.Labeled == 0:
		return "no labels"
	}
	return ""
}

// MarshalJSON writes the rates as null, and a "status", when there were no
// labeled records: a 0 would read as a perfect learner.
func (l LearnerReport) MarshalJSON() ([]byte, error) {
	type plain LearnerReport
	if l.Labeled > 0 {
		return json.Marshal(plain(l))
	}
	return json.Marshal(struct {
		plain
		Status       string   `json:"status"`
		MistakeRate  *float64 `json:"mistake_rate"`
		WindowRate   *float64 `json:"window_rate"`
		BaselineRate *float64 `json:"baseline_rate"`
		Kappa        *float64 `json:"kappa"`
		Accuracy     *float64 `json:"accuracy"`
		MacroF1      *float64 `json:"macro_f1"`
	}{plain: plain(l), Status: l.Status()})
}

// SegmentStats are the rounds between two shifts.
type SegmentStats struct {
	StartRound  int64   `json:"start_round"`
	StartOffset int64   `json:"start_offset"`
	Segment     int     `json:"segment"` // −1 when records carry none
	Rounds      int64   `json:"rounds"`
	Labeled     int64   `json:"labeled"`
	Mistakes    int64   `json:"mistakes"`
	MistakeRate float64 `json:"mistake_rate"`
}

// Recovery is how a learner came back after one shift.
type Recovery struct {
	ShiftRound int64 `json:"shift_round"`
	// PreRate is the windowed mistake rate just before the shift (NaN,
	// written as null, when nothing labeled came before it).
	PreRate float64 `json:"-"`
	// Records until recovered, counting the shift's record; nil if the
	// learner did not recover within its segment.
	Records *int64 `json:"records"`
	// AtMost is set when the first full recovery window already decided
	// it: the learner may have been back sooner, which no window can
	// tell, so Records bounds the recovery from above.
	AtMost bool `json:"at_most,omitempty"`
}

// MarshalJSON writes PreRate as null when it is undefined, since JSON has
// no NaN.
func (r Recovery) MarshalJSON() ([]byte, error) {
	type plain Recovery
	var pre *float64
	if !math.IsNaN(r.PreRate) {
		pre = &r.PreRate
	}
	return json.Marshal(struct {
		plain
		PreRate *float64 `json:"pre_rate"`
	}{plain(r), pre})
}

// UnmarshalJSON reads what MarshalJSON writes (null: NaN).
func (r *Recovery) UnmarshalJSON(b []byte) error {
	type plain Recovery
	var v struct {
		plain
		PreRate *float64 `json:"pre_rate"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = Recovery(v.plain)
	r.PreRate = math.NaN()
	if v.PreRate != nil {
		r.PreRate = *v.PreRate
	}
	return nil
}

// DetectorReport is what one drift detector made of a learner's mistakes.
type DetectorReport struct {
	Name string `json:"name"`
	Spec string `json:"spec"`
	drift.Match
}

// TracePoint is one sample of a learner's state, for plots.
type TracePoint struct {
	Round       int64   `json:"round"`
	Offset      int64   `json:"offset"`
	WindowRate  float64 `json:"window_rate"`
	MistakeRate float64 `json:"mistake_rate"`
	Support     int     `json:"support"`
}

// Report summarizes the stream so far. It can be called at any time; the
// stream goes on unchanged.
func (s *Stream) Report() PartitionReport {
	pr := PartitionReport{Partition: s.partition, FirstOffset: s.firstOffset, LastOffset: s.lastOffset,
		Rounds: s.rounds, Shifts: slices.Clone(s.shifts), LabelRecords: s.labelReads}
	if len(s.bad) > 0 {
		pr.Bad = make(map[string]int64, len(s.bad))
		for k, v := range s.bad {
			pr.Bad[k] = v
		}
	}
	if pr.Shifts == nil {
		pr.Shifts = []Shift{}
	}
	known := make([]int64, len(s.shifts))
	for i, sh := range s.shifts {
		known[i] = sh.Round
	}
	for _, ln := range s.lanes {
		ev := ln.m.Eval()
		classes := ln.m.Classes()
		if !ln.m.Multi() {
			classes = prequential.BinaryClasses
		}
		lr := LearnerReport{Spec: ln.spec, Seed: ln.seed, Rounds: ev.Rounds, Mistakes: ev.Mistakes, Updates: ev.Updates,
			WindowRate: ev.WindowRate(), Support: ev.Support, SupportMax: ev.SupportMax,
			BaselineMistakes: ev.BaselineMistakes, Summary: ev.Summary(classes), Failed: ln.failed,
			Segments: slices.Clone(ln.segments), Recovery: slices.Clone(ln.recovery), Trace: slices.Clone(ln.trace),
			Champions: slices.Clone(ln.champions), ChampionChanges: ln.changes}
		if lr.Recovery == nil {
			lr.Recovery = []Recovery{}
		}
		if ln.labels != nil {
			dl := *ln.labels
			dl.Refused = maps.Clone(dl.Refused)
			st := ln.m.Pending()
			dl.Pending, dl.Evicted, dl.Expired, dl.Replaced = st.Len(), st.Evicted, st.Expired, st.Replaced
			lr.Labels = &dl
		}
		if sel := ln.m.Selector(); sel != nil {
			lr.Selector, lr.Switches, lr.Champion = true, sel.Switches(), sel.Champion()
		}
		if ls := ln.m.CandidateLearners(0); len(ls) > 0 {
			if a, ok := ls[0].(*autolearn.Auto); ok {
				lr.Candidates, lr.Reopens = a.Candidates(), a.Reopens()
				if halving, _, end := a.Narrowing(); halving {
					lr.Halving, lr.NextCut = true, end
				}
			}
		}
		if secs := ln.elapsed.Seconds(); secs > 0 {
			lr.ExamplesPerSecond = float64(ev.Rounds) / secs
		}
		for i := range lr.Segments {
			if sg := &lr.Segments[i]; sg.Labeled > 0 {
				sg.MistakeRate = float64(sg.Mistakes) / float64(sg.Labeled)
			}
		}
		for d, det := range ln.dets {
			m := drift.Evaluate(known, ln.detected[d], s.cfg.MaxDelay)
			// Empty lists, not nulls, for the readers of the JSON report.
			m.Known, m.Detected = nonNil(m.Known), nonNil(m.Detected)
			lr.Detectors = append(lr.Detectors, DetectorReport{Name: det.Name(), Spec: s.cfg.Detectors[d], Match: m})
		}
		if lr.Detectors == nil {
			lr.Detectors = []DetectorReport{}
		}
		pr.Learners = append(pr.Learners, lr)
	}
	return pr
}

func nonNil(xs []int64) []int64 {
	if xs == nil {
		return []int64{}
	}
	return xs
}

// Assemble builds the report of a replay from its streams' reports.
func Assemble(topic string, cfg Config, parts []PartitionReport) Report {
	cfg = cfg.withDefaults()
	rep := Report{Topic: topic, Kernel: cfg.Kernel.String(), Seed: cfg.Seed, Window: cfg.Window,
		RecoveryWindow: cfg.RecoveryWindow, Tolerance: cfg.Tolerance, Partitions: parts}
	if rep.Partitions == nil {
		rep.Partitions = []PartitionReport{}
	}
	for l, def := range cfg.lanes() {
		sm := Summary{Spec: def.name, Selector: def.selector}
		var sum float64
		var classes []string
		var conf [][]uint64
		var unanswered []uint64
		var labeled, baseline uint64
		for _, p := range parts {
			lr := p.Learners[l]
			sm.Labels = sm.Labels.add(lr.Labels)
			sm.Switches += lr.Switches
			labeled += lr.Labeled
			sm.Mistakes += lr.Mistakes
			baseline += lr.BaselineMistakes
			classes, conf, unanswered = prequential.MergeConfusion(classes, conf, unanswered, lr.Classes, lr.Confusion, lr.Unanswered)
			for _, r := range lr.Recovery {
				sm.Shifts++
				if r.Records != nil {
					sm.Recovered++
					sum += float64(*r.Records)
				}
			}
		}
		sm.Summary = prequential.Summarize(labeled, sm.Mistakes, baseline, classes, conf, unanswered)
		if sm.Recovered > 0 {
			sm.MeanRecovery = sum / float64(sm.Recovered)
		}
		rep.Learners = append(rep.Learners, sm)
	}
	return rep
}

// WriteJSON writes the report, indented.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// WriteTable writes a short human summary: a line per learner with its
// overall and per-segment mistake rates, recovery and detections.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "partition\tlearner\tmistakes %\tbaseline %\tkappa\tsupport\tsegments (mistakes %)\trecovery (records)\tdetections (found/known, false)")
	var empty []string
	atMost := false
	for _, p := range r.Partitions {
		if p.Rounds == 0 {
			// One line for all the partitions that held nothing, not a
			// row per learner of each.
			empty = append(empty, strconv.Itoa(p.Partition))
			continue
		}
		for _, l := range p.Learners {
			atMost = writeRow(tw, p.Partition, l) || atMost
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if len(empty) > 0 {
		word := "partition"
		if len(empty) > 1 {
			word = "partitions"
		}
		fmt.Fprintf(w, "%s %s: no records in the range replayed\n", word, strings.Join(empty, ", "))
	}
	if atMost {
		fmt.Fprintf(w, "recovery ≤N: back within tolerance over the first %d labeled records after the shift (--recovery-window), which end N records after it; it may have come sooner\n",
			r.RecoveryWindow)
	}
	r.writeSelections(w)
	r.writeChampions(w)
	return r.writeSummaries(w)
}

// writeRow writes learner l's row of the table and says whether a
// recovery in it is a bound (≤N), which a note below the table explains.
func writeRow(tw io.Writer, partition int, l LearnerReport) (atMost bool) {
	if st := l.Status(); st != "" {
		// No rates to show: 0.00 % would read as a perfect learner.
		fmt.Fprintf(tw, "%d\t%s\t%s\t\t\t%d\t\t\t\n", partition, l.Spec, st, l.Support)
		return false
	}
	segs := ""
	for i, s := range l.Segments {
		if i > 0 {
			segs += " "
		}
		segs += fmt.Sprintf("%.1f", 100*s.MistakeRate)
	}
	rec := ""
	for i, rc := range l.Recovery {
		if i > 0 {
			rec += " "
		}
		switch {
		case rc.Records == nil:
			rec += "-"
		case rc.AtMost:
			rec += fmt.Sprintf("≤%d", *rc.Records)
			atMost = true
		default:
			rec += fmt.Sprint(*rc.Records)
		}
	}
	if rec == "" {
		rec = "no shifts"
	}
	dets := ""
	for i, d := range l.Detectors {
		if i > 0 {
			dets += " "
		}
		dets += fmt.Sprintf("%s %d/%d,%d", d.Name, len(d.Known)-d.Missed, len(d.Known), d.FalseAlarms)
	}
	fmt.Fprintf(tw, "%d\t%s\t%.2f\t%.2f\t%.3f\t%d\t%s\t%s\t%s\n", partition, l.Spec, 100*l.MistakeRate, 100*l.BaselineRate, l.Kappa, l.Support, segs, rec, dets)
	return atMost
}

// writeSelections compares each partition's selection with the best
// single learner in hindsight.
func (r Report) writeSelections(w io.Writer) {
	for _, p := range r.Partitions {
		for i, l := range p.Learners {
			if !l.Selector || i == 0 || l.Labeled == 0 {
				continue
			}
			best := 0
			for k := 1; k < i; k++ {
				if p.Learners[k].MistakeRate < p.Learners[best].MistakeRate {
					best = k
				}
			}
			b := p.Learners[best]
			fmt.Fprintf(w, "partition %d selection: %.2f %% mistakes with %d switches, ending on %s; best single learner in hindsight: %s, %.2f %% (selection %+.2f points)\n",
				p.Partition, 100*l.MistakeRate, l.Switches, p.Learners[l.Champion].Spec, b.Spec, 100*b.MistakeRate, 100*(l.MistakeRate-b.MistakeRate))
		}
	}
}

// writeChampions lists the auto learners' changes of champion and their
// candidates at the end.
func (r Report) writeChampions(w io.Writer) {
	for _, p := range r.Partitions {
		for _, l := range p.Learners {
			if len(l.Candidates) == 0 {
				continue
			}
			writeSearch(w, p.Partition, l)
		}
	}
}

// writeSummaries writes the all-partition lines: delayed labels, then
// the many-class learners' scores and confusion matrices.
func (r Report) writeSummaries(w io.Writer) error {
	for _, sm := range r.Learners {
		if sm.Labels != nil {
			fmt.Fprintf(w, "%s, all partitions: delayed labels: %s\n", sm.Spec, sm.Labels)
		}
	}
	for _, sm := range r.Learners {
		if len(sm.Classes) == 0 || slices.Equal(sm.Classes, prequential.BinaryClasses) {
			continue
		}
		fmt.Fprintf(w, "\n%s, all partitions: %d classes, accuracy %.2f %%, macro-F1 %.3f, %s\n", sm.Spec, len(sm.Classes), 100*sm.Accuracy, sm.MacroF1,
			prequential.Counted(sm.Confusion, sm.Unanswered))
		if err := prequential.WriteConfusion(w, sm.Classes, sm.Confusion, sm.Unanswered); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	return nil
}

// writeSearch prints an auto learner's changes of champion, numbered by
// labeled record as eval numbers them, with what decided each, and its
// candidates at the end.
func writeSearch(w io.Writer, partition int, l LearnerReport) {
	fmt.Fprintf(w, "partition %d %s: %d changes of champion", partition, l.Spec, l.ChampionChanges)
	if l.Reopens > 0 {
		fmt.Fprintf(w, " (%d reopenings of the search)", l.Reopens)
	}
	fmt.Fprintln(w)
	if l.Halving {
		fmt.Fprintf(w, "the search has not narrowed yet: %d candidates still play, the next halving at labeled record %d\n", len(l.Candidates), l.NextCut)
	}
	if len(l.Champions) > 0 {
		fmt.Fprint(w, "champion from labeled record")
		if len(l.Champions) < l.ChampionChanges {
			fmt.Fprintf(w, " (the first %d of %d changes)", len(l.Champions), l.ChampionChanges)
		}
		fmt.Fprintln(w, ":")
	}
	for _, c := range l.Champions {
		fmt.Fprintf(w, "  %9d  %s", c.From, c.Name)
		if c.Why != nil {
			fmt.Fprintf(w, "  (%s)", c.Why)
		}
		fmt.Fprintln(w)
	}
	autolearn.WriteCandidates(w, l.Candidates)
}
