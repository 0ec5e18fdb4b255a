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
