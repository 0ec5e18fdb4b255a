package replay

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/streamlearner/streamlearner/internal/offline"
	"github.com/streamlearner/streamlearner/learners/prequential"
)

// eval's results, replay's summaries and its per-partition reports write
// one summary under the same keys, each key present in all three, and
// none of them nested. Every key but unanswered is written even when
// zero (a binary eval's too), so that a reader finds them all.
func TestSummaryKeysAreTheSameInEvalAndReplay(t *testing.T) {
	var zero map[string]any
	decode(t, prequential.Summary{}, &zero)
	if len(zero) != 9 {
		t.Fatalf("zero summary's keys %v", zero)
	}
	s := prequential.Summarize(10, 3, 4, []string{"a", "b"}, [][]uint64{{4, 1}, {2, 2}}, []uint64{0, 1})
	for name, v := range map[string]any{
		"eval result":       offline.Result{Summary: s},
		"replay summary":    Summary{Summary: s},
		"partition learner": LearnerReport{Rounds: 10, Summary: s},
	} {
		var keys, got map[string]any
		decode(t, s, &keys)
		decode(t, v, &got)
		for k, w := range keys {
			if g, ok := got[k]; !ok || !reflect.DeepEqual(g, w) {
				t.Errorf("%s: %s is %v (present %v), want %v", name, k, g, ok, w)
			}
		}
		if len(keys) != 10 {
			t.Fatalf("%s: summary keys %v", name, keys)
		}
	}
}

// decode is v through JSON.
func decode(t *testing.T, v any, into *map[string]any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatal(err)
	}
}
