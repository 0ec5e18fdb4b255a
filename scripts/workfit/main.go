// Command workfit fits the weights of learners.Outcome.Work to time: it
// plays learners × kernels × data sets, times each run (best of three),
// splits its counted work into rounds, kernel evaluations, their
// non-zeros and matrix multiply-adds, and fits nanoseconds per record to
// them by least squares, each run weighted by 1/time so that cheap and
// costly runs count alike. docs/auto.md gives the weights it found.
//
//	go run ./scripts/workfit [-records 6000] [-data ../shared/datasets] [-checkerboard file] [-text file]
//
// Without a text stream the non-zeros' weight is poorly determined: the
// other sets have 2 to 54 non-zeros a record.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/learners"
)

// runTime bounds one run's time.
const runTime = 2 * time.Second

type set struct {
	name, path string
	kernels    []string
}

func main() {
	records := flag.Int("records", 6000, "records played per run")
	data := flag.String("data", "../shared/datasets", "the data sets' directory")
	board := flag.String("checkerboard", "", "a two-feature stream (streamlearner gen checkerboard --out FILE); none: skipped")
	text := flag.String("text", "", "a stream of unit-length TF-IDF records, many non-zeros each (one of the Reuters streams of scripts/auto.sh reuters, as LIBSVM); none: skipped")
	flag.Parse()
	var rows [][4]float64 // per record: 1, kernel evaluations, their non-zeros, matrix multiply-adds
	var ns []float64
	fmt.Println("data\tkernel\tlearner\tns/record\tevaluations\tnon-zeros\tmatrix")
	for _, s := range dataSets(*data, *board, *text) {
		r, t := playSet(s, *records)
		rows, ns = append(rows, r...), append(ns, t...)
	}
	if len(rows) < 4 {
		fail(fmt.Errorf("%d runs: too few to fit", len(rows)))
	}
	c, err := fit(rows, ns)
	if err != nil {
		fail(err)
	}
	fmt.Printf("\n%d runs: a round %.0f ns beside its kernel row, a kernel evaluation %.2f ns + %.3f ns a non-zero, a matrix multiply-add %.3f ns\n",
		len(rows), c.AtVec(0), c.AtVec(1), c.AtVec(2), c.AtVec(3))
	m := c.AtVec(3)
	fmt.Printf("in matrix multiply-adds: a round %.0f, a kernel evaluation %.1f + %.2f a non-zero (the weights in use: %d, %d + %d)\n",
		c.AtVec(0)/m, c.AtVec(1)/m, c.AtVec(2)/m, learners.WorkRound, learners.WorkEval, learners.WorkEntry)
}

// dataSets are the sets in data, then the text and checkerboard streams
// if given, each with the kernels to play it with.
func dataSets(data, board, text string) []set {
	sets := []set{
		{"a9a", filepath.Join(data, "a9a/a9a.gz"), []string{"rbf:gamma=0.1", "linear", "poly:degree=2,coef0=1"}},
		{"covtype", filepath.Join(data, "covtype/covtype_small_binary.libsvm"), []string{"rbf:gamma=0.001", "linear"}},
		{"w8a", filepath.Join(data, "w8a/w8a.gz"), []string{"rbf:gamma=0.1", "linear"}},
	}
	if text != "" {
		sets = append(sets, set{"text", text, []string{"poly:degree=4,coef0=1", "linear", "rbf:gamma=1"}})
	}
	if board != "" {
		sets = append(sets, set{"checkerboard", board, []string{"rbf:gamma=2", "linear", "poly:degree=3,coef0=1"}})
	}
	return sets
}

// specs are the learners played on each set and kernel.
var specs = []string{"rbp:budget=100", "forgetron:budget=100", "projectron++:budget=100", "pa1:max=100",
	"lbsop:budget=100", "rbp:budget=400", "projectron++:budget=400", "lbsop:budget=400"}

// playSet plays every learner with every kernel of s on its first records
// (a set that does not load is skipped), printing each run: the runs'
// work per record and their nanoseconds per record.
func playSet(s set, records int) (rows [][4]float64, ns []float64) {
	d, err := dataset.Load(context.Background(), s.path, dataset.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "workfit: %s skipped: %v\n", s.name, err)
		return nil, nil
	}
	n := min(len(d.X), records)
	for _, ks := range s.kernels {
		k, err := learners.ParseKernel(ks)
		if err != nil {
			fail(err)
		}
		for _, spec := range specs {
			w := play(spec, k, d, n)
			n := w.played
			// What the counted work holds beside the rounds and the
			// kernel rows is the learner's matrix work.
			matrix := float64(w.work) - float64(n)*learners.WorkRound - float64(w.evals)*learners.WorkEval - float64(w.nnz)*learners.WorkEntry
			r := [4]float64{1, float64(w.evals) / float64(n), float64(w.nnz) / float64(n), matrix / float64(n)}
			t := float64(w.best.Nanoseconds()) / float64(n)
			rows, ns = append(rows, r), append(ns, t)
			fmt.Printf("%s\t%s\t%s\t%.0f\t%.0f\t%.0f\t%.0f\n", s.name, ks, spec, t, r[1], r[2], r[3])
		}
	}
	return rows, ns
}

// timed is one learner's run: its best time of three, the records it
// played, and the work it counted.
type timed struct {
	best             time.Duration
	played           int
	evals, nnz, work uint64
}

// play times spec on the first n records of d, best of three.
func play(spec string, k learners.Kernel, d *dataset.Set, n int) timed {
	// A run stops at n records or after runTime, so that a learner that
	// rebuilds its inverse at every mistake (LBSOP on an ill-conditioned
	// kernel, 15 ms a record) does not hold the fit for minutes; all
	// three runs play what the first played.
	w := timed{best: time.Duration(1 << 62), played: n}
	for rep := range 3 {
		l, err := learners.New(spec, k, 1)
		if err != nil {
			fail(err)
		}
		w.evals, w.nnz, w.work = 0, 0, 0
		t0 := time.Now()
		for i := range w.played {
			sz := uint64(l.Size())
			w.evals += sz
			w.nnz += sz * uint64(len(d.X[i].Idx))
			w.work += l.Round(d.X[i], d.Y[i]).Work
			if rep == 0 && i%64 == 63 && time.Since(t0) > runTime {
				w.played = i + 1
				break
			}
		}
		w.best = min(w.best, time.Since(t0))
	}
	return w
}

// fit solves for the weights c, in nanoseconds, that make each run's
// work times c its time, by least squares, each run weighted by 1/time.
func fit(rows [][4]float64, ns []float64) (*mat.VecDense, error) {
	a := mat.NewDense(len(rows), 4, nil)
	b := mat.NewVecDense(len(rows), nil)
	for i, r := range rows {
		for j, v := range r {
			a.Set(i, j, v/ns[i])
		}
		b.SetVec(i, 1)
	}
	var c mat.VecDense
	if err := c.SolveVec(a, b); err != nil {
		return nil, err
	}
	return &c, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "workfit:", err)
	os.Exit(1)
}
