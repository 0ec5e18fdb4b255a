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

// The C++ peer (the JMLR 2016 online kernel learning library) is measured
// side by side with whole eval processes, in the same run, by
// scripts/peer.sh; no peer time is written down here.

// a9aRecords is the number of records in testdata/a9a.gz.
const a9aRecords = 32561

// BenchmarkA9APass is one pass over a9a (32,561 records) in file order,
// parsing every LIBSVM line from memory and playing one round per record,
// for every learner with B=100 and rbf γ=0.01, the peer's protocol (whole
// processes are compared with the peer by scripts/peer.sh). It reports
// examples/s.
func BenchmarkA9APass(b *testing.B) {
	f, err := os.Open("../../testdata/a9a.gz")
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
		})
	}
}
