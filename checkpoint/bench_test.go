package checkpoint

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/learners"
)

// BenchmarkSnapshot reports the size of a full-budget model's snapshot
// and the time to save it to a directory store (encode, write, fsync,
// rename) and to load it back (read, verify, decode the learner), for
// B = 100 and 1000 on a9a (sparse, 123 features) and MNIST (dense, 784
// features; read from ../shared/datasets when present).
func BenchmarkSnapshot(b *testing.B) {
	sets := map[string]string{"a9a": "../testdata/a9a.gz", "mnist": "../../shared/datasets/mnist/mnist.t.libsvm.gz"}
	for _, name := range []string{"a9a", "mnist"} {
		opts := dataset.Options{}
		if name == "mnist" {
			pos, _ := codec.ParseLabelList("0,1,2,3,4")
			opts.Labels = codec.LabelMap{Positive: pos}
		}
		set, err := dataset.Load(context.Background(), sets[name], opts)
		if err != nil {
			b.Logf("%s: %v (skipped)", name, err)
			continue
		}
		k, _ := learners.ParseKernel("rbf:gamma=0.01")
		if name == "mnist" {
			k, _ = learners.ParseKernel("rbf:gamma=1e-7")
		}
		for _, budget := range []int{100, 1000} {
			l, _ := learners.New(fmt.Sprintf("rbp:budget=%d", budget), k, 1)
			for i := range set.Len() {
				l.Round(set.X[i], set.Y[i])
			}
			model, _ := l.MarshalBinary()
			snap := &Snapshot{Topic: "in", Partition: 0, Generation: 1, Learner: l.Spec(), Kernel: k.String(), Model: model, Created: time.Now()}
			st := DirStore{Dir: b.TempDir()}
			ctx := context.Background()
			b.Run(fmt.Sprintf("%s/B=%d/save", name, budget), func(b *testing.B) {
				for b.Loop() {
					snap.Seq++
					if err := st.Save(ctx, snap.Name(), snap.Encode()); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(snap.Encode())), "bytes")
				b.ReportMetric(float64(l.Size()), "support")
			})
			b.Run(fmt.Sprintf("%s/B=%d/load", name, budget), func(b *testing.B) {
				for b.Loop() {
					raw, err := st.Load(ctx, snap.Name())
					if err != nil {
						b.Fatal(err)
					}
					s, err := Decode(raw)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := learners.Unmarshal(s.Model); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
