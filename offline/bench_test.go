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

// peerSeconds is the whole-process time of the C++ peer (the JMLR 2016
// online-kernel-learning library) for one pass over a9a (32,561 records,
// rbf γ=0.01, B=100, parsing included), measured side by side with this
// project on a quiet machine of the same class, as recorded in issue 17:
// RBP 0.353 s, Forgetron 0.463 s, Projectron 0.430 s, Projectron++
// 0.486 s, of which 0.046 s is start-up and parsing. The Projectron
// figures are the peer's configuration, which this project reproduces as
// projectron:eta=0,max=B and projectron++:eta=0,max=B,u=U(B) (the peer
// fixes η = 0 and caps the set; U(100) = ¼√(101/ln 101)). The peer's
// B=500 times were not recorded; docs/performance.md derives them from
// the ratios the issue gives.
var peerSeconds = map[string]float64{"rbp:budget=100": 0.353, "forgetron:budget=100": 0.463,
	"projectron:eta=0,max=100": 0.430, "projectron++:eta=0,max=100,u=1.16952": 0.486}

// a9aRecords is the number of records in testdata/a9a.gz.
const a9aRecords = 32561

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
		"projectron:eta=0,max=100", "projectron++:eta=0,max=100,u=1.16952",
		"rbp:budget=500", "forgetron:budget=500", "projectron:eta=0,max=500", "projectron++:eta=0,max=500,u=2.24431",
		"tighter0:budget=100", "tighter:budget=100,validation=100", "tightest:budget=100", "rbsop:budget=100", "lbsop:budget=100", "spa:lambda=0.5", "pa1:c=1"} {
		b.Run(spec, func(b *testing.B) {
			n, passes := 0, 0
			for b.Loop() {
				passes++
				l, err := learners.New(spec, k, 1)
				if err != nil {
					b.Fatal(err)
				}
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
			if n != a9aRecords*passes {
				b.Fatalf("%d records in %d passes", n, passes)
			}
			if peer, ok := peerSeconds[spec]; ok {
				b.ReportMetric(a9aRecords/peer, "peer-examples/s")
				b.ReportMetric(eps*peer/a9aRecords, "x-peer")
			}
		})
	}
}
