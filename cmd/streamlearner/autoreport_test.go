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
	"github.com/streamlearner/streamlearner/learners"
)

// changeLine is a line of the list of champions: its labeled record, then
// its name.
var changeLine = regexp.MustCompile(`(?m)^ +(\d+)  (\S+ kernel=\S+(?: scaled)?)`)

// listed are the labeled records and names of the champions a report
// lists under "champion from labeled record".
func listed(t *testing.T, out string) []string {
	t.Helper()
	_, list, ok := strings.Cut(out, "champion from labeled record")
	if !ok {
		t.Fatalf("no list of champions in\n%s", out)
	}
	list, _, _ = strings.Cut(list, "candidates (")
	var got []string
	for _, m := range changeLine.FindAllStringSubmatch(list, -1) {
		got = append(got, m[1]+" "+m[2])
	}
	return got
}

// TestAutoChangesNumberedAlike: eval and replay, each at its default
// learner (auto), number a change of champion by the same labeled record
// (the first at which the new champion is champion), and say why.
func TestAutoChangesNumberedAlike(t *testing.T) {
	b, dir, file := seaFileAndTopic(t)
	seed := []string{"--seed", "3"}
	ev := evalJSON(t, append([]string{"eval", "--data", file, "--keep-order", "--format", "json"}, seed...)...)
	evText, err := execute(t, append([]string{"eval", "--data", file, "--keep-order"}, seed...)...)
	if err != nil {
		t.Fatal(err)
	}
	table, rep := replaySea(t, b, dir, seed)
	row := rep.Partitions[0].Learners[0]
	if len(ev) != 1 || ev[0].Auto == nil || row.Spec != ev[0].Spec || row.MistakeRate != ev[0].MistakeRate {
		t.Fatalf("replay's default learner %s (%v), eval's %+v", row.Spec, row.MistakeRate, ev)
	}
	var want []string
	for _, c := range ev[0].Auto.Champions[1:] {
		want = append(want, strconv.FormatUint(c.From(), 10)+" "+c.Name)
		if c.Why == nil || !strings.Contains(evText, c.Why.String()) {
			t.Fatalf("eval does not say why %s became champion:\n%s", c.Name, evText)
		}
	}
	var fromReplay []string
	for _, c := range row.Champions {
		fromReplay = append(fromReplay, strconv.FormatUint(c.From, 10)+" "+c.Name)
	}
	if len(want) == 0 || len(want) >= 63 || !slices.Equal(fromReplay, want) {
		t.Fatalf("replay's changes %v, eval's %v", fromReplay, want)
	}
	if got := listed(t, evText); !slices.Equal(got[1:], want) || got[0] != "1 "+ev[0].Auto.Champions[0].Name {
		t.Fatalf("eval's table lists %v, its report %v", got, want)
	}
	if got := listed(t, table); !slices.Equal(got, want) {
		t.Fatalf("replay's table lists %v, eval %v", got, want)
	}
}

// TestCheckpointShowsTheSearch: list and inspect of an auto model's
// snapshot show that its kernel is searched, and inspect numbers the
// changes of champion as the model reported them record by record (what
// run logs).
func TestCheckpointShowsTheSearch(t *testing.T) {
	k, _ := learners.ParseKernel("rbf:gamma=0.1")
	m, err := model.New(model.Config{Learner: "auto:rung=50,window=200,width=8", Kernel: k, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	set, err := dataset.Load(context.Background(), "../../testdata/a9a.gz", dataset.Options{Limit: 1500})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1 " + m.SearchChampion()}
	for i, x := range set.X {
		r, err := m.StepVector(x, []byte(strconv.Itoa(set.Y[i])))
		if err != nil {
			t.Fatal(err)
		}
		if r.SearchTo != "" {
			want = append(want, strconv.FormatUint(r.SearchChange.From(), 10)+" "+r.SearchTo)
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
	list, err := execute(t, "checkpoint", "list", "--checkpoint-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(list, "rbf:gamma=0.1") || !strings.Contains(list, "kernel=searched") {
		t.Fatalf("list shows the kernel given, which auto does not use:\n%s", list)
	}
	out, err := execute(t, "checkpoint", "inspect", "--checkpoint-dir", dir, snap.Name())
	if err != nil {
		t.Fatal(err)
	}
	kernel := regexp.MustCompile(`(?m)^kernel +(.*)$`).FindStringSubmatch(out)
	if kernel == nil || !strings.HasPrefix(kernel[1], "searched") || !strings.Contains(kernel[1], m.SearchChampion()) {
		t.Fatalf("inspect's kernel line does not say the kernel is searched, and the champion's:\n%s", out)
	}
	if len(want) > 64 {
		want = want[len(want)-64:]
	}
	if got := listed(t, out); len(want) < 3 || !slices.Equal(got, want) {
		t.Fatalf("inspect lists %v, the model reported %v", got, want)
	}
}
