package autolearn

import (
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/learners"
)

// TestParamsListTheDefaults holds the table `streamlearner learners` prints
// to the code: every parameter of the canonical spec is listed, with the
// default the code takes.
func TestParamsListTheDefaults(t *testing.T) {
	var info *learners.Info
	for _, in := range learners.Available() {
		if in.Name == Name {
			info = &in
		}
	}
	if info == nil {
		t.Fatal("auto is not among the learners available")
	}
	cfg, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	sp, err := learners.ParseSpec(cfg.Spec())
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, p := range info.Params {
		listed[p.Name] = p.Default
	}
	for k, v := range sp.Params {
		if d, ok := listed[k]; !ok {
			t.Errorf("%s= is not listed", k)
		} else if d != v {
			t.Errorf("%s= is listed with default %q; the code takes %q", k, d, v)
		}
	}
	for k := range listed {
		if _, ok := sp.Params[k]; !ok {
			t.Errorf("%s= is listed but not a parameter (%s)", k, strings.TrimPrefix(cfg.Spec(), Name+":"))
		}
	}
}

// TestNewbornIsNotListedAsPerfect: a candidate born at the last labeled
// record has made no mistake because it has not been scored, which
// "0.00 %" would hide.
func TestNewbornIsNotListedAsPerfect(t *testing.T) {
	a, err := New(Config{Learners: []string{"rbp"}, Kernels: []string{"rbf"}, Width: 4, Keep: 2}, learners.Kernel{Kind: learners.Linear}, 1)
	if err != nil {
		t.Fatal(err)
	}
	print := func() string {
		var b strings.Builder
		WriteCandidates(&b, a.Candidates())
		return b.String()
	}
	if out := print(); strings.Contains(out, "0.00 %") || !strings.Contains(out, "new") {
		t.Fatalf("no labeled record yet, listed as:\n%s", out)
	}
	xs, ys := board(1, 1, 1)
	a.Round(xs[0], ys[0])
	for _, c := range a.Candidates() {
		if c.Labeled != 1 {
			t.Fatalf("%s: %d labeled records since its birth, want 1", c.Name, c.Labeled)
		}
	}
	if out := print(); strings.Contains(out, "new") || !strings.Contains(out, " %  ") {
		t.Fatalf("after a labeled record, listed as:\n%s", out)
	}
}
