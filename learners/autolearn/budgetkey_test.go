package autolearn

import (
	"testing"

	"github.com/streamlearner/streamlearner/learners"
)

// TestBudgetKeyCachesTheFoundKey: asked twice (the second answer from the
// cache), every learner's budget key is the one building it finds, and so
// is the error of a learner that has none or does not exist.
func TestBudgetKeyCachesTheFoundKey(t *testing.T) {
	names := []string{"nosuchlearner"}
	for _, info := range learners.Available() {
		names = append(names, info.Name)
	}
	for _, name := range names {
		want, wantErr := findBudgetKey(name)
		for range 2 {
			got, err := budgetKey(name)
			if got != want || (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("%s: budgetKey %q, %v; building it finds %q, %v", name, got, err, want, wantErr)
			}
		}
	}
}
