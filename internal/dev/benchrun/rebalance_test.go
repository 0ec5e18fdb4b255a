package benchrun

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// reportRebalance over made-up predictions: two partitions, a record of
// each every 100 ms taking 10 ms; after the join partition 1 is not
// served for 2 s (its records wait), and its records of that time are
// predicted twice (read again from the committed offset): the second
// predictions must not count.
func TestReportRebalance(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ev := rebalanceEvents{start: t0, join: t0.Add(10 * time.Second), leave: t0.Add(20 * time.Second), end: t0.Add(30 * time.Second)}
	var seen []seenPrediction
	for i := range 300 {
		sent := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		for p := range 2 {
			made := sent.Add(10 * time.Millisecond)
			if p == 1 && !sent.Before(ev.join) && sent.Before(ev.join.Add(2*time.Second)) {
				made = ev.join.Add(2 * time.Second)
				seen = append(seen, seenPrediction{partition: p, offset: int64(i), sent: sent, made: made.Add(time.Second)})
			}
			seen = append(seen, seenPrediction{partition: p, offset: int64(i), sent: sent, made: made})
		}
	}
	var out bytes.Buffer
	reportRebalance(&out, firstOfEach(seen), ev, 2, 5*time.Second)
	got := out.String()
	for _, want := range []string{
		"600 records predicted",
		"steady, one member: 100 records, record → prediction p50 10.0 ms, p99 10.0 ms, max 10.0 ms",
		"after the join: every partition served again within 2.00 s (its records' longest wait); median partition 0.01 s; 1 partitions waited over 1 s",
		"after the leave: every partition served again within 0.01 s",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
}

// Measure refuses, before starting anything, what it cannot measure.
func TestRebalanceCheck(t *testing.T) {
	started := false
	ok := Rebalance{
		Partitions: []int{4}, Rate: 100, Phase: time.Second, FlushInterval: time.Millisecond,
		Broker: func(context.Context, int) (func(), string, error) {
			started = true
			return nil, "", errors.New("no broker in this test")
		},
		Member: func(context.Context, MemberSpec) (func(), error) { return nil, errors.New("no member in this test") },
	}
	for _, c := range []struct {
		edit func(*Rebalance)
		want string
	}{
		{func(r *Rebalance) { r.Rate = 99 }, "--rate 99: want at least 100"},
		{func(r *Rebalance) { r.Phase = 0 }, "--phase 0s: want a positive duration"},
		{func(r *Rebalance) { r.FlushInterval = -time.Millisecond }, "--flush-interval -1ms: want a positive duration"},
		{func(r *Rebalance) { r.Partitions = []int{4, 0} }, "--partitions [4 0]: want positive counts"},
		{func(r *Rebalance) { r.Partitions = nil }, "--partitions []: want positive counts"},
		{func(r *Rebalance) { r.Member = nil }, "no Broker or Member"},
	} {
		r := ok
		c.edit(&r)
		err := r.Measure(context.Background(), io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	if started {
		t.Error("a broker was started for a run that cannot be measured")
	}
}
