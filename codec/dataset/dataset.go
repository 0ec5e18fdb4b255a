// Package dataset loads labeled example files for offline runs (eval,
// produce, reproduction scripts) and prepares them the way the papers'
// protocols do: label mapping, standardization, random orders.
//
// A file holds one record per line, LIBSVM text or JSON (the same record
// formats the service consumes, decoded by package codec), optionally
// gzip-compressed (detected by its magic bytes, not its name). Blank lines
// and lines starting with '#' are skipped. A malformed line is an error
// naming the file and line: an experiment should not silently run on
// different data than its command says. Records in binary files (Avro
// object container files, length-delimited Protobuf) are read by
// AvroFile and Delimited as the wire format's payloads.
package dataset

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sync"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// Set is a loaded data set in file order.
type Set struct {
	Path    string
	X       []sparse.Vector
	Y       []int // +1, −1, or 0 for an unlabeled record
	Lines   []int // each record's line in its file, for messages
	Dim     int   // largest feature index seen
	Dropped int   // records the label map dropped (labels in neither class)
}

// Len is the number of examples.
func (s *Set) Len() int { return len(s.X) }

// Options control loading.
type Options struct {
	// Labels maps raw labels to ±1; the zero value accepts binary labels
	// only (±1, 0/1, true/false).
	Labels codec.LabelMap
	// Limit keeps only the first Limit examples (after label mapping);
	// 0 keeps all.
	Limit int
	// Limits bounds one record; zero fields take codec's defaults, and
	// empty feature vectors are allowed (LIBSVM files may hold all-zero
	// points).
	Limits codec.Limits
	// MaxBad is how many malformed records (or labels the map refuses)
	// are skipped, each passed to Bad, before one more fails the load; 0
	// (default) fails at the first, naming its line.
	MaxBad int
	// Bad, if set, receives each skipped record's file line and error.
	Bad func(line int, err error)
	// Progress, if set, receives the count of records read so far, every
	// progressEvery records, so that a long load shows it is alive.
	Progress func(records int)
}

// progressEvery is how often Options.Progress hears of a load.
const progressEvery = 1 << 14

// skip decides on a bad record at line: nil while the budget lasts (the
// record is skipped and reported), else the error that ends the load.
func (o *Options) skip(skipped *int, line int, err error) error {
	if *skipped >= o.MaxBad {
		if o.MaxBad > 0 {
			return fmt.Errorf("line %d: %w (one more than --max-bad %d)", line, err, o.MaxBad)
		}
		return fmt.Errorf("line %d: %w", line, err)
	}
	*skipped++
	if o.Bad != nil {
		o.Bad(line, err)
	}
	return nil
}

// maxLine bounds one line, like codec's default record limit but larger:
// dense data sets (MNIST rows) have long lines.
const maxLine = 16 << 20

// Load reads a whole file. It checks ctx between lines so that a long load
// can be interrupted.
func Load(ctx context.Context, path string, opts Options) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load data: %w", err)
	}
	defer f.Close()
	s, err := Read(ctx, f, opts)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	s.Path = path
	return s, nil
}

// Read is Load on an open reader.
func Read(ctx context.Context, r io.Reader, opts Options) (*Set, error) {
	s := &Set{}
	dropped, err := each(ctx, r, opts, func(line int, x sparse.Vector, y int) {
		s.X = append(s.X, x)
		s.Y = append(s.Y, y)
		s.Lines = append(s.Lines, line)
		s.Dim = max(s.Dim, int(x.MaxIndex()))
	})
	if err != nil {
		return nil, err
	}
	s.Dropped = dropped
	return s, nil
}

// Each calls fn with each example Load would keep (its label mapped to
// +1, −1, or 0 for an unlabeled record), in file order, as soon as it is
// decoded, so that the caller can use the first records while the rest
// are still being read. It returns how many records the label map dropped,
// and the first error, as Load reports it.
func Each(ctx context.Context, path string, opts Options, fn func(line int, x sparse.Vector, y int)) (dropped int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("load data: %w", err)
	}
	defer f.Close()
	if dropped, err = each(ctx, f, opts, fn); err != nil {
		return dropped, fmt.Errorf("load %s: %w", path, err)
	}
	return dropped, nil
}

// EachUntil is Each whose fn may stop the reading with an error, which it
// returns as it is.
func EachUntil(ctx context.Context, path string, opts Options, fn func(line int, x sparse.Vector, y int) error) (dropped int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("load data: %w", err)
	}
	defer f.Close()
	var stop error
	dropped, err = eachUntil(ctx, f, opts, nil, func(line int, x sparse.Vector, y int) error {
		stop = fn(line, x, y)
		return stop
	})
	if err != nil && (stop == nil || !errors.Is(err, stop)) {
		return dropped, fmt.Errorf("load %s: %w", path, err)
	}
	return dropped, err
}

// each is Each on an open reader.
func each(ctx context.Context, r io.Reader, opts Options, fn func(line int, x sparse.Vector, y int)) (dropped int, err error) {
	return eachUntil(ctx, r, opts, nil, func(line int, x sparse.Vector, y int) error {
		fn(line, x, y)
		return nil
	})
}

// eachUntil calls fn for each kept record, and flush, if not nil, where
// scan calls it (after each batch read, and before returning).
func eachUntil(ctx context.Context, r io.Reader, opts Options, flush func() error, fn func(line int, x sparse.Vector, y int) error) (dropped int, err error) {
	kept, skipped := 0, 0
	bad := func(line int, err error) error { return opts.skip(&skipped, line, err) }
	err = scan(ctx, r, opts.Limits, flush, bad, func(line int, ex codec.Example) (bool, error) {
		y, keep, err := opts.Labels.Map(ex.Label)
		if err != nil {
			return true, bad(line, err)
		}
		if !keep {
			dropped++
			return true, nil
		}
		if err := fn(line, ex.X, y); err != nil {
			return false, err
		}
		kept++
		if opts.Progress != nil && kept%progressEvery == 0 {
			opts.Progress(kept)
		}
		return opts.Limit <= 0 || kept < opts.Limit, nil
	})
	return dropped, err
}

// RawSet is a loaded data set with its labels as they are in the file,
// for constructions that choose their own binarization (such as the
// chunks of synth.Chunks).
type RawSet struct {
	Path   string
	X      []sparse.Vector
	Labels []string // canonical label tokens (codec.CanonicalLabel); "" for an unlabeled record
	Lines  []int    // each record's line in its file
	Dim    int      // largest feature index seen
}

// Len is the number of examples.
func (s *RawSet) Len() int { return len(s.X) }

// LoadRaw reads a whole file keeping every record and its label token;
// opts.Labels is not used, and opts.Limit keeps the first Limit records.
func LoadRaw(ctx context.Context, path string, opts Options) (*RawSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load data: %w", err)
	}
	defer f.Close()
	s := &RawSet{Path: path}
	err = eachRaw(ctx, f, opts, func(line int, x sparse.Vector, label string) error {
		s.X = append(s.X, x)
		s.Labels = append(s.Labels, label)
		s.Lines = append(s.Lines, line)
		s.Dim = max(s.Dim, int(x.MaxIndex()))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return s, nil
}

// EachRaw calls fn with each record LoadRaw would keep, in file order, as
// soon as it is decoded, until fn returns an error (returned as it is),
// the file ends or ctx ends.
func EachRaw(ctx context.Context, path string, opts Options, fn func(line int, x sparse.Vector, label string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("load data: %w", err)
	}
	defer f.Close()
	var stop error
	err = eachRaw(ctx, f, opts, func(line int, x sparse.Vector, label string) error {
		stop = fn(line, x, label)
		return stop
	})
	if err != nil && (stop == nil || !errors.Is(err, stop)) {
		return fmt.Errorf("load %s: %w", path, err)
	}
	return err
}

func eachRaw(ctx context.Context, r io.Reader, opts Options, fn func(line int, x sparse.Vector, label string) error) error {
	kept, skipped := 0, 0
	return scan(ctx, r, opts.Limits, nil, func(line int, err error) error { return opts.skip(&skipped, line, err) }, func(line int, ex codec.Example) (bool, error) {
		if err := fn(line, ex.X, ex.Label); err != nil {
			return false, err
		}
		kept++
		if opts.Progress != nil && kept%progressEvery == 0 {
			opts.Progress(kept)
		}
		return opts.Limit <= 0 || kept < opts.Limit, nil
	})
}

// Batch is a run of consecutive records as EachBatch and EachRawBatch give
// them, in file order, record k being (X[k], Y[k] or Labels[k], Lines[k]).
// A Batch and its vectors are valid only during the call that receives
// it: the next runs of the file are decoded into the same storage, so that
// a reading allocates nothing per record. The callee copies what it keeps
// (sparse.Vector.Clone); a learner keeps its own copies (package
// learners), so a learner's Round may take the vectors as they are.
type Batch struct {
	X      []sparse.Vector
	Y      []int    // EachBatch's: labels mapped to +1, −1, or 0 for an unlabeled record
	Labels []string // EachRawBatch's: canonical label tokens, "" for an unlabeled record
	Lines  []int    // each record's line in its file
}

// Len is the number of records.
func (b *Batch) Len() int { return len(b.X) }

func (b *Batch) reset() {
	clear(b.X) // no vector outlives its batch through this one
	b.X, b.Y, b.Labels, b.Lines = b.X[:0], b.Y[:0], b.Labels[:0], b.Lines[:0]
}

// EachBatch is EachUntil a run of records at a time, in batches whose
// storage the reading reuses (see Batch): a pass that is done with each
// record before the next run, such as one learner's pass in file order,
// reads a file of any length without allocating for its records.
func EachBatch(ctx context.Context, path string, opts Options, fn func(*Batch) error) (dropped int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("load data: %w", err)
	}
	defer f.Close()
	var b Batch
	var stop error
	flush := b.flushTo(fn, &stop)
	dropped, err = eachUntil(ctx, f, opts, flush, func(line int, x sparse.Vector, y int) error {
		b.X, b.Y, b.Lines = append(b.X, x), append(b.Y, y), append(b.Lines, line)
		return nil
	})
	if err != nil && (stop == nil || !errors.Is(err, stop)) {
		return dropped, fmt.Errorf("load %s: %w", path, err)
	}
	return dropped, err
}

// flushTo returns what scan calls after each batch: b goes to fn, then is
// emptied for reuse. fn's error is also kept in *stop, so that the caller
// can tell it from a reading error and return it unwrapped.
func (b *Batch) flushTo(fn func(*Batch) error, stop *error) func() error {
	return func() error {
		if b.Len() == 0 {
			return nil
		}
		*stop = fn(b)
		b.reset()
		return *stop
	}
}

// EachRawBatch is EachRaw a run of records at a time, as EachBatch reads
// them; the batches carry Labels, not Y.
func EachRawBatch(ctx context.Context, path string, opts Options, fn func(*Batch) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("load data: %w", err)
	}
	defer f.Close()
	var b Batch
	var stop error
	flush := b.flushTo(fn, &stop)
	kept, skipped := 0, 0
	err = scan(ctx, f, opts.Limits, flush, func(line int, err error) error { return opts.skip(&skipped, line, err) }, func(line int, ex codec.Example) (bool, error) {
		b.X, b.Labels, b.Lines = append(b.X, ex.X), append(b.Labels, ex.Label), append(b.Lines, line)
		kept++
		if opts.Progress != nil && kept%progressEvery == 0 {
			opts.Progress(kept)
		}
		return opts.Limit <= 0 || kept < opts.Limit, nil
	})
	if err != nil && (stop == nil || !errors.Is(err, stop)) {
		return fmt.Errorf("load %s: %w", path, err)
	}
	return err
}

// scan decodes every record of r, gunzipping it if needed, and passes it
// with its line number to fn, in file order, until fn returns false or an
// error.
//
// With flush, scan calls it once fn has seen the records of each run it
// decoded, and before it returns (unless with flush's own error), and then
// decodes later runs into the storage of that run's vectors: fn must be
// done with them when flush returns. Without flush, each vector has
// arrays of its own.
//
// Reading (gunzip, line splitting) and decoding overlap: one goroutine
// cuts the input into batches of lines, scanWorkers decode batches in
// parallel, and the caller's goroutine takes the batches back in order, so
// fn sees exactly what a sequential loop would show it, and the first
// error in file order is the one returned. On a9a this halves the load
// time on two cores (docs/performance.md).
func scan(ctx context.Context, r io.Reader, lim codec.Limits, flush func() error, bad func(line int, err error) error, fn func(line int, ex codec.Example) (more bool, err error)) error {
	br, closeGzip, err := gunzipped(r)
	if err != nil {
		return err
	}
	defer closeGzip()
	lim.AllowEmpty = true
	if lim.MaxBytes == 0 {
		lim.MaxBytes = maxLine
	}

	workers := max(1, runtime.GOMAXPROCS(0))
	done := make(chan struct{})
	todo := make(chan *batch, workers)
	// results holds one slot per batch in flight, in file order: a batch
	// is put in order before its decoding starts, and the receiver waits
	// on each slot's ready channel.
	results := make(chan *batch, 2*workers+1)
	// free returns processed batches to the reader for reuse.
	free := make(chan *batch, cap(results)+workers+1)
	var wg sync.WaitGroup
	wg.Add(1 + workers)
	go func() {
		defer wg.Done()
		defer close(todo)
		defer close(results)
		readBatches(ctx, br, done, todo, results, free)
	}()
	reuse := flush != nil
	for range workers {
		go func() {
			defer wg.Done()
			for b := range todo {
				b.decode(lim, reuse)
				close(b.ready)
			}
		}()
	}
	defer wg.Wait()
	defer close(done)
	// end ends the reading with err, once flush has passed on the records
	// fn took before it, as fn sees them without flush.
	end := func(err error) error {
		if flush != nil {
			if ferr := flush(); ferr != nil {
				return ferr
			}
		}
		return err
	}
	for b := range results {
		<-b.ready
		for k, ex := range b.exs {
			if b.errs[k] != nil {
				if err := bad(b.line[k], b.errs[k]); err != nil {
					return end(err)
				}
				continue
			}
			more, err := fn(b.line[k], ex)
			if err != nil {
				return end(err)
			}
			if !more {
				return end(nil)
			}
		}
		if err := end(nil); err != nil {
			return err
		}
		if b.err != nil {
			return b.err
		}
		select {
		case free <- b:
		default:
		}
	}
	return nil
}

// batchLines and batchBytes bound a batch: enough work to amortize the
// hand-offs, little enough that the pipeline starts at once.
const (
	batchLines = 512
	batchBytes = 1 << 18
)

// batch is a run of consecutive records: their bytes end to end in buf
// (record k is buf[end[k-1]:end[k]]) and their line numbers. decode fills
// exs and errs, in order, a record or the error of a malformed one each;
// a batch that only carries a read error (or the context's, in err) has no
// records.
type batch struct {
	buf   []byte
	end   []int
	line  []int
	exs   []codec.Example
	errs  []error
	err   error
	ready chan struct{}
	// dec, when the batch is decoded for reuse, holds its vectors' storage
	// from one use of the batch to the next.
	dec *codec.Decoder
}

// decode decodes the batch's records; with reuse, into the storage of the
// vectors of its last use, which its receiver is done with.
func (b *batch) decode(lim codec.Limits, reuse bool) {
	start := 0
	b.exs, b.errs = b.exs[:0], b.errs[:0]
	if !reuse {
		for _, e := range b.end {
			ex, err := codec.Decode(b.buf[start:e], lim)
			b.exs = append(b.exs, ex)
			b.errs = append(b.errs, err)
			start = e
		}
		return
	}
	if b.dec == nil {
		b.dec = codec.NewDecoder(lim)
	}
	b.dec.Reset()
	for _, e := range b.end {
		ex, err := b.dec.Decode(b.buf[start:e])
		b.exs = append(b.exs, ex)
		b.errs = append(b.errs, err)
		start = e
	}
}

// readBatches splits br into batches of non-blank, non-comment lines and
// hands each to results (for order) and then todo (for decoding), until
// the input ends, ctx is done (its error travels as a last batch) or done
// is closed.
func readBatches(ctx context.Context, br *bufio.Reader, done <-chan struct{}, todo, results chan<- *batch, free <-chan *batch) {
	next := func() *batch {
		select {
		case b := <-free:
			b.buf, b.end, b.line, b.exs, b.errs = b.buf[:0], b.end[:0], b.line[:0], b.exs[:0], b.errs[:0]
			b.ready = make(chan struct{})
			return b
		default:
			return &batch{ready: make(chan struct{})}
		}
	}
	send := func(b *batch) bool {
		if len(b.end) == 0 {
			b.ready = closed // nothing to decode
		}
		select {
		case results <- b:
		case <-done:
			return false
		}
		if len(b.end) == 0 {
			return true
		}
		select {
		case todo <- b:
			return true
		case <-done:
			return false
		}
	}
	fail := func(err error) { send(&batch{err: err}) }
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 1<<16), maxLine+1)
	b := next()
	for line := 1; sc.Scan(); line++ {
		if line%4096 == 0 && ctx.Err() != nil {
			if send(b) {
				fail(ctx.Err())
			}
			return
		}
		rec := bytes.TrimSpace(sc.Bytes())
		if len(rec) == 0 || rec[0] == '#' {
			continue
		}
		b.buf = append(b.buf, rec...)
		b.end = append(b.end, len(b.buf))
		b.line = append(b.line, line)
		if len(b.end) == batchLines || len(b.buf) >= batchBytes {
			if !send(b) {
				return
			}
			b = next()
		}
	}
	if !send(b) {
		return
	}
	if err := sc.Err(); err != nil {
		fail(fmt.Errorf("read: %w", err))
	}
}

// closed is a channel that is always ready: an error-only batch needs no
// decoding.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Stats are per-feature means and standard deviations; index i holds
// feature i+1.
type Stats struct {
	Mean, Std []float64
}

// ComputeStats returns the mean and (population) standard deviation of every
// feature 1..s.Dim, counting absent entries as zeros.
func ComputeStats(s *Set) Stats {
	d := s.Dim
	sum := make([]float64, d)
	for _, x := range s.X {
		for k, i := range x.Idx {
			sum[i-1] += x.Val[k]
		}
	}
	n := float64(len(s.X))
	st := Stats{Mean: make([]float64, d), Std: make([]float64, d)}
	for i := range sum {
		st.Mean[i] = sum[i] / n
	}
	// Second pass about the mean: no cancellation for large means.
	sq := make([]float64, d)
	seen := make([]int, d)
	for _, x := range s.X {
		for k, i := range x.Idx {
			dv := x.Val[k] - st.Mean[i-1]
			sq[i-1] += dv * dv
			seen[i-1]++
		}
	}
	for i := range sq {
		absent := n - float64(seen[i])
		sq[i] += absent * st.Mean[i] * st.Mean[i]
		st.Std[i] = math.Sqrt(sq[i] / n)
	}
	return st
}

// Standardize maps every example in place to (x − mean)/std over the
// features the statistics know. A feature with zero spread becomes 0; a
// feature beyond the statistics (seen only in a test file) is dropped, as
// a model trained without it cannot use it.
func (st Stats) Standardize(s *Set) {
	d := len(st.Mean)
	dense := make([]float64, d)
	for j, x := range s.X {
		clear(dense)
		for k, i := range x.Idx {
			if int(i) >= 1 && int(i) <= d {
				dense[i-1] = x.Val[k]
			}
		}
		for i := range dense {
			if st.Std[i] > 0 {
				dense[i] = (dense[i] - st.Mean[i]) / st.Std[i]
			} else {
				dense[i] = 0
			}
		}
		s.X[j] = sparse.FromDense(dense)
	}
	s.Dim = d
}

// gunzipped buffers r, gunzipping it when it starts with the gzip magic
// bytes; release frees the decompressor.
func gunzipped(r io.Reader) (br *bufio.Reader, release func(), err error) {
	br = bufio.NewReaderSize(r, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		return bufio.NewReaderSize(zr, 1<<16), func() { zr.Close() }, nil
	}
	return br, func() {}, nil
}

// Lines calls fn with each non-blank line of r (gunzipped when it starts
// with the gzip magic bytes), blanks trimmed, and its 1-based line number,
// until fn returns false or an error, or ctx ends. The bytes are valid only
// during the call.
func Lines(ctx context.Context, r io.Reader, fn func(line int, b []byte) (more bool, err error)) error {
	br, closeGzip, err := gunzipped(r)
	if err != nil {
		return err
	}
	defer closeGzip()
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 1<<16), maxLine+1)
	for line := 1; sc.Scan(); line++ {
		if line%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		more, err := fn(line, b)
		if err != nil || !more {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	return nil
}

// LinesOf is Lines over the file at path; a CSV file (IsCSV) gives each
// row as a JSON event (CSVEvents) with the line it starts on.
func LinesOf(ctx context.Context, path string, fn func(line int, b []byte) (more bool, err error)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if IsCSV(path) {
		return csvLines(ctx, f, fn)
	}
	return Lines(ctx, f, fn)
}

// csvLines is Lines for CSV: each row as a JSON event.
func csvLines(ctx context.Context, r io.Reader, fn func(line int, b []byte) (more bool, err error)) error {
	br, closeGzip, err := gunzipped(r)
	if err != nil {
		return err
	}
	defer closeGzip()
	n := 0
	for _, row := range csvRows(br) {
		if row.err != nil {
			return row.err
		}
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		more, err := fn(row.line, row.event)
		if err != nil || !more {
			return err
		}
	}
	return nil
}
