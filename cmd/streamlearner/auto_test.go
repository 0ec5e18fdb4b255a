package main

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/internal/offline"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/autolearn"
)

// TestEvalDefaultsToAuto: eval without --learner searches ("auto") and
// reports what it chose.
func TestEvalDefaultsToAuto(t *testing.T) {
	got := evalJSON(t, "eval", "--data", "../../testdata/a9a.gz", "--limit", "3000", "--keep-order", "--format", "json")
	if len(got) != 1 || got[0].Spec != "auto" || got[0].Auto == nil {
		t.Fatalf("%+v", got)
	}
	a := got[0].Auto
	// After the halving, three candidates with a budget; the primal ones
	// left beside them (no budget=, no max=) go as they lose their duels.
	budgeted := 0
	for _, c := range a.Candidates {
		if strings.Contains(c.Name, "budget=") || strings.Contains(c.Name, "max=") {
			budgeted++
		}
	}
	if len(a.Champions) == 0 || a.Champions[0].After != 0 || len(a.Candidates) == 0 || budgeted > 3 {
		t.Fatalf("auto report %+v", a)
	}
	// a9a's mistake rate is about 20 %, below the majority baseline.
	if r := got[0]; r.MistakeRate < 0.1 || r.MistakeRate >= r.BaselineRate {
		t.Fatalf("mistake rate %.4f, baseline %.4f", r.MistakeRate, r.BaselineRate)
	}
	out, err := execute(t, "eval", "--data", "../../testdata/a9a.gz", "--limit", "1000", "--learner", "auto:learners=rbp|lbp,budget=50..100")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "champion from labeled record") || !strings.Contains(out, "candidates (mistakes and work a record since their birth") {
		t.Fatalf("no report of the search in\n%s", out)
	}
}

// TestAutoReplayEqualsEval: replay of a topic with --learner auto gives
// eval's numbers on the same records in file order.
func TestAutoReplayEqualsEval(t *testing.T) {
	b, dir, file := seaFileAndTopic(t)
	flags := []string{"--learner", "auto:rung=50,window=300,width=10", "--seed", "3"}
	ev := evalJSON(t, append([]string{"eval", "--data", file, "--keep-order", "--format", "json"}, flags...)...)
	table, rep := replaySea(t, b, dir, flags)
	// The line of changes may end with the reopenings of the search.
	if !regexp.MustCompile(`changes of champion( \(\d+ reopenings? of the search\))?\nchampion from labeled record:\n`).MatchString(table) || !strings.Contains(table, "candidates (mistakes and work a record since their birth") {
		t.Fatalf("the replay table does not show the search:\n%s", table)
	}
	rows := rep.Partitions[0].Learners
	if len(rows) != 1 || len(ev) != 1 || ev[0].Auto == nil || ev[0].Auto.Switches == 0 {
		t.Fatalf("replay rows %d, eval rows %d: %+v", len(rows), len(ev), ev)
	}
	if r, e := rows[0], ev[0]; r.MistakeRate != e.MistakeRate || float64(r.Support) != e.Support {
		t.Fatalf("replay %v (support %d), eval %v (%v)", r.MistakeRate, r.Support, e.MistakeRate, e.Support)
	}
}

// TestCheckpointInspectShowsTheSearch: inspect of a snapshot whose model's
// learner is "auto" prints its champions and candidates.
func TestCheckpointInspectShowsTheSearch(t *testing.T) {
	k, _ := learners.ParseKernel("rbf:gamma=0.1")
	m, err := model.New(model.Config{Learner: "auto:rung=50,window=200,width=8", Kernel: k, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	set, err := dataset.Load(context.Background(), "../../testdata/a9a.gz", dataset.Options{Limit: 1500})
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range set.X {
		if _, err := m.StepVector(x, []byte(strconv.Itoa(set.Y[i]))); err != nil {
			t.Fatal(err)
		}
	}
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	snap := checkpoint.Snapshot{Version: 2, Topic: "in", Partition: 0, Generation: 1, Seq: 1, Learner: m.Spec(), Kernel: k.String(),
		NextOffset: 1500, Created: time.Now(), Model: b}
	dir := t.TempDir()
	if err := (checkpoint.DirStore{Dir: dir}).Save(context.Background(), snap.Name(), snap.Encode()); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, "checkpoint", "inspect", "--checkpoint-dir", dir, snap.Name())
	if err != nil {
		t.Fatal(err)
	}
	a := offline.AutoOf(m, 0)
	champ := a.Candidates[slices.IndexFunc(a.Candidates, func(c autolearn.Status) bool { return c.Champion })].Name
	if !strings.Contains(out, "search (auto:") || !strings.Contains(out, "* ") || !strings.Contains(out, champ) || a.Switches == 0 {
		t.Fatalf("inspect does not show the search (champion %s):\n%s", champ, out)
	}
}
