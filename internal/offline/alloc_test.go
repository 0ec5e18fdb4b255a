package offline

import (
	"context"
	"runtime"
	"testing"

	"github.com/streamlearner/streamlearner/learners"
)

// TestAPassAllocatesNothingPerRecord: a pass in file order, around a
// learner that keeps one support vector, allocates a bounded amount per
// run, not per record (a label converted for the model, the target of an
// errors.As escaping, each cost one allocation a record, and their
// collections).
func TestAPassAllocatesNothingPerRecord(t *testing.T) {
	set := load(t, "../../testdata/a9a.gz", 0)
	k, _ := learners.ParseKernel("linear")
	for _, data := range []*Data{FromSet(set), streamOf(set, 1, nil)} {
		cfg := Config{Learners: []string{"perceptron:max=1"}, Kernel: k, KeepOrder: true}
		if _, err := RunData(context.Background(), data, nil, cfg); err != nil { // the first run's buffers
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := RunData(context.Background(), data, nil, cfg); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if n := after.Mallocs - before.Mallocs; n > uint64(set.Len()/20) {
			t.Errorf("streamed %v: %d allocations for a pass over %d records", data.stream != nil, n, set.Len())
		}
	}
}
