package offline

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/learners"
)

// peerExamplesPerSecond is what the C++ peer of the JMLR 2016
// online-kernel-learning library does on this machine class (a9a, B=100,
// γ=0.01, one pass including parsing), for comparison in the output.
var peerExamplesPerSecond = map[string]float64{"perceptron": 5e3, "rbp": 140e3, "forgetron": 110e3, "projectron": 120e3, "projectron++": 95e3}

// BenchmarkA9APass is one pass over a9a (32,561 records) in file order,
// parsing every LIBSVM line from memory and playing one round per record,
// for every learner with B=100 and rbf γ=0.01: the protocol of the peer's
// published speed figures. It reports examples/s.
func BenchmarkA9APass(b *testing.B) {
	f, err := os.Open("../testdata/a9a.gz")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		b.Fatal(err)
	}
	k, _ := learners.ParseKernel("rbf:gamma=0.01")
	for _, spec := range []string{"perceptron", "stoptron:budget=100", "rbp:budget=100", "lbp:budget=100", "forgetron:budget=100", "cks:budget=100", "projectron:budget=100", "projectron++:budget=100",
		"tighter0:budget=100", "tighter:budget=100,validation=100", "tightest:budget=100", "rbsop:budget=100", "lbsop:budget=100", "spa:lambda=0.5", "pa1:c=1"} {
		b.Run(spec, func(b *testing.B) {
			n := 0
			for b.Loop() {
				l, _ := learners.New(spec, k, 1)
				sc := bufio.NewScanner(bytes.NewReader(raw))
				for sc.Scan() {
					ex, err := codec.DecodeLIBSVM(sc.Bytes(), codec.Limits{})
					if err != nil {
						b.Fatal(err)
					}
					y, _, err := codec.LabelMap{}.Map(ex.Label)
					if err != nil {
						b.Fatal(err)
					}
					l.Round(ex.X, y)
					n++
				}
			}
			eps := float64(n) / b.Elapsed().Seconds()
			b.ReportMetric(eps, "examples/s")
			name, _ := learners.ParseSpec(spec)
			if peer, ok := peerExamplesPerSecond[name.Name]; ok {
				b.ReportMetric(eps/peer, "x-peer")
			}
		})
	}
}
