package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/produce"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
	"github.com/streamlearner/streamlearner/pipeline"
)

// Topics and group of a rebalance run, on a broker of its own.
const (
	rebalanceIn    = "rebalance-in"
	rebalanceOut   = "rebalance-out"
	rebalanceGroup = "rebalance"
)

// seenPrediction is one prediction seen: its input partition, when its record
// was sent (the record's key) and when the member stamped its batch.
type seenPrediction struct {
	partition  int
	offset     int64
	sent, made time.Time
}

// Rebalance is what `streamlearner bench --rebalance` measures: a group
// at the most of Partitions through a member joining and a member
// leaving. Records go at Rate a second, each keyed by when it was sent;
// one member serves alone for Phase, a second joins and serves beside it
// for Phase, then leaves (its stop), and the first serves alone for Phase
// more. The latency of a record is its prediction batch's timestamp minus
// its sending. Its fields are bench's flags; the defaults named are
// theirs, Measure takes none.
type Rebalance struct {
	// Data is the LIBSVM file of the records, sent over and over
	// (default testdata/a9a.gz).
	Data string
	// Partitions: the input and output topics get the most of them; each
	// must be positive (default 4).
	Partitions []int
	// Rate is the records sent a second, at least 100 (default 10,000).
	Rate int
	// Phase is how long each of the three phases lasts, positive
	// (default 30 s); the latency windows are at most 30 s of it.
	Phase time.Duration
	// FlushInterval is the members' --flush-interval, positive (default
	// 5 ms); Measure only checks it and prints it, Member applies it.
	FlushInterval time.Duration
	// Learner is the members' learner spec, for the report's first line
	// (default rbp:budget=100).
	Learner string
	// ProcessingGuarantee is the members' (default at-least-once); under
	// exactly-once the predictions are read committed.
	ProcessingGuarantee string
	// Broker starts a broker of its own with partitions partitions a
	// topic and returns its address and how to stop it.
	Broker func(ctx context.Context, partitions int) (stop func(), addr string, err error)
	// Member starts a member (`streamlearner run` in a process of its
	// own) as spec says; stop makes it leave as an orchestrator does
	// (SIGTERM) and returns once it has gone.
	Member func(ctx context.Context, spec MemberSpec) (stop func(), err error)
}

// MemberSpec is what a member of a rebalance run serves and where.
type MemberSpec struct {
	Name                      string // "a", the first, or "b", the one joining
	Broker                    string // address
	Topic, OutputTopic, Group string
	Dir                       string // for its log and its checkpoints, shared by both members
}

// check rejects what the run cannot measure.
func (r *Rebalance) check() error {
	switch {
	case r.Rate < 100:
		return fmt.Errorf("--rate %d: want at least 100 records a second", r.Rate)
	case r.Phase <= 0:
		return fmt.Errorf("--phase %v: want a positive duration", r.Phase)
	case r.FlushInterval <= 0:
		return fmt.Errorf("--flush-interval %v: want a positive duration", r.FlushInterval)
	case len(r.Partitions) == 0 || slices.Min(r.Partitions) <= 0:
		return fmt.Errorf("--partitions %v: want positive counts", r.Partitions)
	case r.Broker == nil || r.Member == nil:
		return errors.New("bench: rebalance: no Broker or Member to start")
	}
	return nil
}

// Measure runs the broker, the sender, the reader of predictions and the
// members' comings and goings, then prints the report to out.
func (r *Rebalance) Measure(ctx context.Context, out io.Writer) error {
	if err := r.check(); err != nil {
		return err
	}
	parts := slices.Max(r.Partitions)
	msgs, err := LoadA9A(ctx, r.Data)
	if err != nil {
		return err
	}
	stop, addr, err := r.Broker(ctx, parts)
	if err != nil {
		return err
	}
	defer stop()
	dir, err := os.MkdirTemp("", "streamlearner-rebalance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(out, "rebalance: %d partitions, %d records/s, %s, --flush-interval %v, %s; a member alone %v, a second joins for %v and leaves (SIGTERM), the first alone %v more; broker and members in child processes\n",
		parts, r.Rate, r.Learner, r.FlushInterval, r.ProcessingGuarantee, r.Phase, r.Phase, r.Phase)
	if err := createTopics(ctx, addr, parts, rebalanceIn, rebalanceOut, rebalanceIn+".dlq"); err != nil {
		return err
	}
	seen, events, err := r.run(ctx, addr, dir, parts, msgs)
	if err != nil {
		return err
	}
	reportRebalance(out, firstOfEach(seen), events, parts, min(r.Phase, 30*time.Second))
	return nil
}

// run sends and reads predictions while the members come and go, and
// returns the predictions seen and when the members came and went.
func (r *Rebalance) run(ctx context.Context, addr, dir string, parts int, msgs []kafka.Message) ([]seenPrediction, rebalanceEvents, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var seen []seenPrediction
	var mu sync.Mutex
	observed := make(chan error, 1)
	go func() {
		observed <- observe(ctx, addr, parts, r.ProcessingGuarantee == pipeline.ExactlyOnce, func(s seenPrediction) {
			mu.Lock()
			seen = append(seen, s)
			mu.Unlock()
		})
	}()
	sent := make(chan error, 1)
	go func() { sent <- paced(ctx, addr, parts, r.Rate, msgs) }()
	events, err := r.members(ctx, addr, dir)
	cancel()
	if err2 := errors.Join(<-sent, <-observed); err == nil && err2 != nil && !errors.Is(err2, context.Canceled) {
		err = err2
	}
	mu.Lock()
	defer mu.Unlock()
	return seen, events, err
}

// rebalanceEvents are when the members came and went.
type rebalanceEvents struct{ start, join, leave, end time.Time }

// members runs the first member, the second's join and leave, and then
// stops the first; it returns when each happened.
func (r *Rebalance) members(ctx context.Context, addr, dir string) (rebalanceEvents, error) {
	var ev rebalanceEvents
	spec := func(name string) MemberSpec {
		return MemberSpec{Name: name, Broker: addr, Topic: rebalanceIn, OutputTopic: rebalanceOut, Group: rebalanceGroup, Dir: dir}
	}
	ev.start = time.Now()
	stopA, err := r.Member(ctx, spec("a"))
	if err != nil {
		return ev, err
	}
	defer stopA()
	wait := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	if err := wait(r.Phase); err != nil {
		return ev, err
	}
	ev.join = time.Now()
	stopB, err := r.Member(ctx, spec("b"))
	if err != nil {
		return ev, err
	}
	if err := wait(r.Phase); err != nil {
		stopB()
		return ev, err
	}
	ev.leave = time.Now()
	stopB()
	err = wait(r.Phase)
	ev.end = time.Now()
	return ev, err
}

// paced sends rate records a second round-robin over the partitions,
// every 10 ms a hundredth, each keyed by when it was sent, until ctx
// ends: one Produce request a tick naming every partition it feeds
// (kafka-go's Writer sends one a partition, which at 1,024 partitions
// was more than the host could send).
func paced(ctx context.Context, addr string, parts, rate int, msgs []kafka.Message) error {
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	per := max(rate/100, 1)
	for i, next := 0, 0; ; {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		now := time.Now()
		key := []byte(strconv.FormatInt(now.UnixNano(), 10))
		byPart := map[int][]protocol.Record{}
		for range per {
			// A Bytes is read once: one each.
			byPart[next] = append(byPart[next], protocol.Record{Time: now, Key: protocol.NewBytes(key), Value: protocol.NewBytes(msgs[i%len(msgs)].Value)})
			i, next = i+1, (next+1)%parts
		}
		req := &produce.Request{Acks: 1, Timeout: 10_000, Topics: []produce.RequestTopic{{Topic: rebalanceIn}}}
		for p, recs := range byPart {
			req.Topics[0].Partitions = append(req.Topics[0].Partitions,
				produce.RequestPartition{Partition: int32(p), RecordSet: protocol.RecordSet{Version: 2, Records: protocol.NewRecordReader(recs...)}})
		}
		if _, err := tr.RoundTrip(ctx, kafka.TCP(addr), req); err != nil && ctx.Err() == nil {
			return fmt.Errorf("bench: send: %w", err)
		}
	}
}

// observe reads the predictions as they come (read committed under
// exactly-once) through one fetch for all partitions, and hands each to
// seen.
func observe(ctx context.Context, addr string, parts int, committed bool, seen func(seenPrediction)) error {
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	f, err := fetch.NewFetcher(fetch.FetcherConfig{Addr: kafka.TCP(addr), Transport: tr, ReadUncommitted: !committed, MaxWait: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	defer f.Close()
	var wg sync.WaitGroup
	for id := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			part := f.Open(rebalanceOut, id, 0)
			defer part.Close()
			for ctx.Err() == nil {
				b, err := part.Fetch(ctx, 50*time.Millisecond)
				if err != nil {
					continue
				}
				for _, r := range b.Records {
					if s, ok := sampleOf(r); ok {
						seen(s)
					}
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// sampleOf reads a prediction: its record's partition and offset, and
// when the record was sent (its key).
func sampleOf(r fetch.Record) (seenPrediction, bool) {
	p, err := codec.DecodePrediction(r.Value)
	if err != nil {
		return seenPrediction{}, false
	}
	ns, err := strconv.ParseInt(p.Key, 10, 64)
	if err != nil {
		return seenPrediction{}, false
	}
	return seenPrediction{partition: int(p.Partition), offset: p.Offset, sent: time.Unix(0, ns), made: r.Time}, true
}

// firstOfEach keeps each record's first prediction: those made again
// after a rebalance (at-least-once reads again from the committed
// offset) came to the readers before.
func firstOfEach(seen []seenPrediction) []seenPrediction {
	type id struct {
		partition int
		offset    int64
	}
	first := map[id]int{}
	var out []seenPrediction
	for _, s := range seen {
		k := id{s.partition, s.offset}
		if i, ok := first[k]; ok {
			if s.made.Before(out[i].made) {
				out[i] = s
			}
			continue
		}
		first[k] = len(out)
		out = append(out, s)
	}
	return out
}

// reportRebalance prints the p99 latency in steady state (the window
// before the join), over the window either side of each event, and how
// long after each event every partition was served again: a record sent
// at or after the event predicted.
func reportRebalance(out io.Writer, seen []seenPrediction, ev rebalanceEvents, parts int, window time.Duration) {
	fmt.Fprintf(out, "%d records predicted (each record's first prediction)\n", len(seen))
	line := func(what string, from, to time.Time) {
		var lat []float64
		for _, s := range seen {
			if !s.sent.Before(from) && s.sent.Before(to) {
				lat = append(lat, s.made.Sub(s.sent).Seconds()*1e3)
			}
		}
		slices.Sort(lat)
		if len(lat) == 0 {
			fmt.Fprintf(out, "%s: no predictions\n", what)
			return
		}
		fmt.Fprintf(out, "%s: %d records, record → prediction p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
			what, len(lat), pct(lat, 0.50), pct(lat, 0.99), lat[len(lat)-1])
	}
	line("steady, one member", ev.join.Add(-window), ev.join)
	line("around the join", ev.join.Add(-window), ev.join.Add(window))
	line("steady, two members", ev.leave.Add(-window), ev.leave)
	line("around the leave", ev.leave.Add(-window), ev.leave.Add(window))
	for _, e := range []struct {
		what string
		at   time.Time
	}{{"join", ev.join}, {"leave", ev.leave}} {
		outage(out, seen, e.what, e.at, parts, window)
	}
}

// outage prints how long the partitions went unserved after an event: a
// partition's longest wait is the most any of its records sent within
// window after the event waited for its prediction (a record that came
// while no member served the partition waits until one does, and a
// member can only join or leave once the group has rebalanced, which
// the event's time does not say).
func outage(out io.Writer, seen []seenPrediction, what string, at time.Time, parts int, window time.Duration) {
	longest := make([]float64, parts)
	for _, s := range seen {
		if !s.sent.Before(at) && s.sent.Before(at.Add(window)) && s.partition < parts {
			longest[s.partition] = max(longest[s.partition], s.made.Sub(s.sent).Seconds())
		}
	}
	slices.Sort(longest)
	over := len(longest) - sort.SearchFloat64s(longest, 1)
	fmt.Fprintf(out, "after the %s: every partition served again within %.2f s (its records' longest wait); median partition %.2f s; %d partitions waited over 1 s\n",
		what, longest[len(longest)-1], pct(longest, 0.5), over)
}

// pct is the q-quantile of sorted xs (nearest rank).
func pct(xs []float64, q float64) float64 {
	i := int(q*float64(len(xs))+0.5) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}
