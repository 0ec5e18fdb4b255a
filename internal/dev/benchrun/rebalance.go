package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/produce"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/dev/benchrun"
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

// rebalance measures a group at the most partitions of --partitions
// through a member joining and a member leaving: records at --rate a
// second, each keyed by when it was sent; one member serves alone for
// --phase, a second joins and serves beside it for --phase, then leaves
// (SIGTERM), and the first serves alone for --phase more. Each member is
// `streamlearner run` in a process of its own, with --flush-interval;
// the latency of a record is its prediction batch's timestamp minus its
// sending.
func (c *benchCmd) rebalance(ctx context.Context, out io.Writer) error {
	switch {
	case c.Rate < 100:
		return fmt.Errorf("--rate %d: want at least 100 records a second", c.Rate)
	case c.Phase <= 0:
		return fmt.Errorf("--phase %v: want a positive duration", c.Phase)
	case c.FlushInterval <= 0:
		return fmt.Errorf("--flush-interval %v: want a positive duration", c.FlushInterval)
	case slices.Min(c.Partitions) <= 0:
		return fmt.Errorf("--partitions %v: want positive counts", c.Partitions)
	}
	parts := slices.Max(c.Partitions)
	msgs, err := benchrun.LoadA9A(ctx, c.Data)
	if err != nil {
		return err
	}
	stop, addr, err := childBroker(ctx, parts)
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
		parts, c.Rate, c.Learner, c.FlushInterval, c.ProcessingGuarantee, c.Phase, c.Phase, c.Phase)
	if err := createRebalanceTopics(ctx, addr, parts); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var seen []seenPrediction
	var mu sync.Mutex
	observed := make(chan error, 1)
	go func() {
		observed <- observe(ctx, addr, parts, c.ProcessingGuarantee == pipeline.ExactlyOnce, func(s seenPrediction) {
			mu.Lock()
			seen = append(seen, s)
			mu.Unlock()
		})
	}()
	sent := make(chan error, 1)
	go func() { sent <- paced(ctx, addr, parts, c.Rate, msgs) }()
	events, err := c.members(ctx, addr, dir)
	cancel()
	if err2 := errors.Join(<-sent, <-observed); err == nil && err2 != nil && !errors.Is(err2, context.Canceled) {
		err = err2
	}
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	reportRebalance(out, firstOfEach(seen), events, parts, min(c.Phase, 30*time.Second))
	return nil
}

// rebalanceEvents are when the members came and went.
type rebalanceEvents struct{ start, join, leave, end time.Time }

// members runs the first member, the second's join and leave, and then
// stops the first; it returns when each happened.
func (c *benchCmd) members(ctx context.Context, addr, dir string) (rebalanceEvents, error) {
	var ev rebalanceEvents
	ev.start = time.Now()
	a, err := c.member(ctx, addr, dir, "a")
	if err != nil {
		return ev, err
	}
	defer a.stop()
	wait := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	if err := wait(c.Phase); err != nil {
		return ev, err
	}
	ev.join = time.Now()
	b, err := c.member(ctx, addr, dir, "b")
	if err != nil {
		return ev, err
	}
	if err := wait(c.Phase); err != nil {
		b.stop()
		return ev, err
	}
	ev.leave = time.Now()
	b.stop()
	err = wait(c.Phase)
	ev.end = time.Now()
	return ev, err
}

// runningMember is a member process, done closed once it ended.
type runningMember struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// member starts `streamlearner run` from this executable, its log in
// dir.
func (c *benchCmd) member(ctx context.Context, addr, dir, name string) (*runningMember, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench: find this executable: %w", err)
	}
	log, err := os.Create(dir + "/member-" + name + ".log")
	if err != nil {
		return nil, err
	}
	args := []string{"run", "--brokers", addr, "--topic", rebalanceIn, "--output-topic", rebalanceOut, "--group", rebalanceGroup,
		"--learner", c.Learner, "--kernel", c.Kernel, "--flush-interval", c.FlushInterval.String(), "--auto-create",
		"--metrics-addr", "127.0.0.1:0", "--log-format", "json", "--processing-guarantee", c.ProcessingGuarantee,
		"--checkpoint-dir", dir + "/checkpoints"}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("bench: start member %s: %w", name, err)
	}
	m := &runningMember{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); log.Close(); close(m.done) }()
	return m, nil
}

// stop sends SIGTERM, as an orchestrator does, and waits for the member
// to leave (killed after 30 s).
func (m *runningMember) stop() {
	m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		m.cmd.Process.Kill()
		<-m.done
	}
}

func createRebalanceTopics(ctx context.Context, addr string, parts int) error {
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(addr), Transport: tr}
	resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: rebalanceIn, NumPartitions: parts, ReplicationFactor: 1},
		{Topic: rebalanceOut, NumPartitions: parts, ReplicationFactor: 1},
		{Topic: rebalanceIn + ".dlq", NumPartitions: 1, ReplicationFactor: 1},
	}})
	if err != nil {
		return fmt.Errorf("bench: create topics: %w", err)
	}
	for n, err := range resp.Errors {
		if err != nil {
			return fmt.Errorf("bench: create topic %s: %w", n, err)
		}
	}
	return nil
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
