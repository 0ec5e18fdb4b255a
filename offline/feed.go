package offline

import (
	"context"
	"math"
	"sync"

	"github.com/streamlearner/streamlearner/sparse"
)

// Feed fills a Data while RunData reads it, so that a single pass in file
// order learns while the file is still being parsed: on a9a with a budget
// of 100 the two take about as long, and the pass no longer waits for the
// whole load (docs/performance.md).
//
// One goroutine, the loader, calls Add for each record and End once. Runs
// read only what has been published: records go out in groups of
// feedGroup, and the last group at End. A configuration that needs the
// whole set first (random orders, a delay) waits for End before it
// starts. What a run computes does not depend on how the loading and the
// runs interleave: it sees the same records in the same order.
type Feed struct {
	d      *Data
	x      []sparse.Vector // the loader's own; x[:published] is shared
	labels []string
	lines  []int // file lines, when the loader gives them (AddAt)
}

// feedGroup is how many records the loader adds between publications: a
// run waits at most that long behind the parser, and a publication (a lock
// and a wake-up) costs a few microseconds.
const feedGroup = 256

// live is the shared side of a Feed.
type live struct {
	mu      sync.Mutex
	x       []sparse.Vector // published records (headers copied under mu)
	labels  []string
	lines   []int
	ended   bool
	err     error
	changed chan struct{} // closed and replaced at each publication
}

// NewFeed returns an empty feed of binary records.
func NewFeed() *Feed {
	return &Feed{d: &Data{mapped: true, live: &live{changed: make(chan struct{})}}}
}

// Data is the data set the feed fills, to give RunData as its train set.
func (f *Feed) Data() *Data { return f.d }

// Add appends a record with its label y: +1, −1, or 0 for an unlabeled
// record (the tokens of FromSet). x must not change afterwards.
func (f *Feed) Add(x sparse.Vector, y int) {
	f.add(x, y)
}

// AddAt is Add for the record at a line of its file, which errors about
// it then name.
func (f *Feed) AddAt(line int, x sparse.Vector, y int) {
	f.lines = append(f.lines, line)
	f.add(x, y)
}

func (f *Feed) add(x sparse.Vector, y int) {
	f.x = append(f.x, x)
	f.labels = append(f.labels, binaryToken(y))
	if len(f.x)%feedGroup == 0 {
		f.publish(false, nil)
	}
}

// End publishes the last records and closes the feed; err, if not nil, is
// why loading stopped, and RunData returns it.
func (f *Feed) End(err error) { f.publish(true, err) }

func (f *Feed) publish(end bool, err error) {
	l := f.d.live
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	l.x, l.labels, l.lines = f.x, f.labels, f.lines
	l.ended, l.err = end, err
	close(l.changed)
	l.changed = make(chan struct{})
}

// upTo returns d as it stands once it holds more than i records, or once
// it is complete, or when ctx ends: a Data without a feed, which its
// reader may index freely below its Len. For a complete Data it returns d
// itself.
func (d *Data) upTo(ctx context.Context, i int) *Data {
	if d.live == nil {
		return d
	}
	x, labels, lines, _, _ := d.live.wait(ctx, i)
	return &Data{X: x, Labels: labels, Lines: lines, mapped: true}
}

// complete waits for d's feed to end and returns the whole data set, or
// the loader's error (or ctx's); for a Data without a feed it returns d.
func (d *Data) complete(ctx context.Context) (*Data, error) {
	if d.live == nil {
		return d, nil
	}
	x, labels, lines, ended, err := d.live.wait(ctx, math.MaxInt)
	switch {
	case err != nil:
		return nil, err
	case !ended:
		return nil, ctx.Err()
	}
	return &Data{X: x, Labels: labels, Lines: lines, mapped: true}, nil
}

// wait returns what is published once it holds more than i records, once
// the feed has ended (with the loader's error), or when ctx ends.
func (l *live) wait(ctx context.Context, i int) (x []sparse.Vector, labels []string, lines []int, ended bool, err error) {
	for {
		l.mu.Lock()
		x, labels, lines, ended, err = l.x, l.labels, l.lines, l.ended, l.err
		changed := l.changed
		l.mu.Unlock()
		if len(x) > i || ended {
			return x, labels, lines, ended, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return x, labels, lines, false, nil
		}
	}
}

// binaryToken is the label token of a binary label, as FromSet writes it.
func binaryToken(y int) string {
	switch y {
	case 1:
		return "1"
	case -1:
		return "-1"
	}
	return ""
}
