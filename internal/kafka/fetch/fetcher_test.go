package fetch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamlearner/streamlearner/internal/dev/embedded"
)

// produceTo writes values to one partition of topic, a record batch per
// call.
func produceTo(t *testing.T, addr, topic string, partition int, values ...string) {
	t.Helper()
	w := &kafka.Writer{Transport: &kafka.Transport{}, Addr: kafka.TCP(addr), Topic: topic, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: len(values),
		Balancer: kafka.BalancerFunc(func(kafka.Message, ...int) int { return partition })}
	defer w.Close()
	var msgs []kafka.Message
	for _, v := range values {
		msgs = append(msgs, kafka.Message{Key: []byte("k" + v), Value: []byte(v), Headers: []kafka.Header{{Key: "h", Value: []byte("H" + v)}}})
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}

// cluster starts brokers with topic "t" of n partitions, counting the
// Fetch requests each broker receives and the partitions they name.
func cluster(t *testing.T, brokers, n int) (c *kfake.Cluster, addr string, requests, named *atomic.Int64) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.SeedTopics(int32(n), "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	requests, named = new(atomic.Int64), new(atomic.Int64)
	c.ControlKey(int16(kmsg.Fetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		requests.Add(1)
		for _, tp := range r.(*kmsg.FetchRequest).Topics {
			named.Add(int64(len(tp.Partitions)))
		}
		return nil, nil, false
	})
	return c, c.ListenAddrs()[0], requests, named
}

// drain reads p from where it stands to offset end, checking each record
// against values (the record at offset o is values[o]).
func drain(ctx context.Context, p *Partition, end int64, values []string) error {
	want := p.Offset()
	for p.Offset() < end || p.Offset() < 0 {
		b, err := p.Fetch(ctx, 100*time.Millisecond)
		if err != nil {
			return err
		}
		for _, rec := range b.Records {
			if want >= 0 && rec.Offset != want {
				return fmt.Errorf("%s/%d: offset %d, want %d", p.topic, p.id, rec.Offset, want)
			}
			want = rec.Offset + 1
			v := values[rec.Offset]
			if string(rec.Value) != v || string(rec.Key) != "k"+v || len(rec.Headers) != 1 || string(rec.Headers[0].Value) != "H"+v {
				return fmt.Errorf("%s/%d offset %d: %q %q %v, want %q", p.topic, p.id, rec.Offset, rec.Key, rec.Value, rec.Headers, v)
			}
		}
		if len(b.Records) > 0 && b.Records[0].Offset >= b.Next {
			return fmt.Errorf("batch at %d has next %d", b.Records[0].Offset, b.Next)
		}
	}
	return nil
}

// drainAll reads every partition p of topic "t" from offset from to the
// end of values[p], all at once, and returns the first error.
func drainAll(ctx context.Context, f *Fetcher, values [][]string, from int64) error {
	errs := make(chan error, len(values))
	for p := range values {
		go func() {
			fp := f.Open("t", p, from)
			defer fp.Close()
			errs <- drain(ctx, fp, int64(len(values[p])), values[p])
		}()
	}
	var first error
	for range values {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// One request per broker names many partitions: the partitions of three
// brokers are read whole and in order, with far fewer requests than
// partition batches.
func TestFetcherReadsManyPartitionsWithRequestsPerBroker(t *testing.T) {
	const parts, batches, per = 24, 5, 40
	c, addr, requests, named := cluster(t, 3, parts)
	values := make([][]string, parts)
	for p := range parts {
		for b := range batches {
			var vs []string
			for i := range per {
				vs = append(vs, fmt.Sprintf("p%d-%d-%s", p, b*per+i, strings.Repeat("z", 50)))
			}
			values[p] = append(values[p], vs...)
			produceTo(t, addr, "t", p, vs...)
		}
	}
	leaders := map[int32]bool{}
	for p := range parts {
		leaders[c.LeaderFor("t", int32(p))] = true
	}
	if len(leaders) < 2 {
		t.Fatalf("leaders %v: the test needs partitions on several brokers", leaders)
	}
	f, err := NewFetcher(FetcherConfig{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}, PartitionMaxBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	requests.Store(0)
	if err := drainAll(ctx, f, values, kafka.FirstOffset); err != nil {
		t.Fatal(err)
	}
	// With 8 KiB shares each partition needs an answer per batch (7.3
	// KB: value, key and header); a request per partition would make as many requests as that.
	r, n := requests.Load(), named.Load()
	t.Logf("%d fetch requests named %d partitions", r, n)
	if n < parts*batches/2 {
		t.Errorf("%d partitions named in all: each of %d partitions needs several answers", n, parts)
	}
	// A request a partition batch would make 120; the bound leaves room
	// for a loaded machine, whose consumers, slow to take their batches,
	// free fewer partitions for each request (63 were seen with six test
	// runs at once, 27 to 43 with two).
	if r > parts*batches*3/4 {
		t.Errorf("%d fetch requests for %d partition batches (%d partitions named): want one request for many partitions", r, parts*batches, n)
	}
	// A request still in flight holds its reservation until answered.
	for deadline := time.Now().Add(5 * time.Second); f.Held() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes held after every partition closed", f.Held())
		}
	}
}

// The bytes held stay within MaxBytes while consumers hold their
// batches, and everything is still read, in order, once they go on.
func TestFetcherHoldsNoMoreThanMaxBytes(t *testing.T) {
	const parts, per = 12, 300
	_, addr, _, _ := cluster(t, 1, parts)
	values := make([][]string, parts)
	for p := range parts {
		for i := range per {
			values[p] = append(values[p], fmt.Sprintf("p%d-%d-%s", p, i, strings.Repeat("x", 200)))
		}
		for i := 0; i < per; i += 50 {
			produceTo(t, addr, "t", p, values[p][i:i+50]...)
		}
	}
	const budget = 64 << 10 // for 12 partitions of 190 KB on the wire
	f, err := NewFetcher(FetcherConfig{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}, MaxBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		peak atomic.Int64
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() { // the held bytes, sampled
		defer close(done)
		for {
			peak.Store(max(peak.Load(), int64(f.Held())))
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	ps := make([]*Partition, parts)
	for p := range parts {
		ps[p] = f.Open("t", p, 0)
		// Each takes a batch and holds it: the budget runs out.
		if _, err := ps[p].Fetch(ctx, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // room for requests the budget should stop
	// Every 50-record batch is 31.7 KB on the wire (key, value and
	// header of 210 bytes each) and held as 38.2 KB: a budget of 64 KiB
	// holds one, beside what requests reserve.
	if p := peak.Load(); p > budget {
		t.Errorf("held %d bytes with consumers holding their batches, budget %d", p, budget)
	}
	var wg sync.WaitGroup
	errs := make(chan error, parts)
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer ps[p].Close()
			errs <- drain(ctx, ps[p], per, values[p])
		}()
	}
	wg.Wait()
	close(stop)
	<-done
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if p := peak.Load(); p > budget {
		t.Errorf("held up to %d bytes, budget %d", p, budget)
	}
}

// A partition's first batch, larger than the share its request gave it,
// is not kept while it would take the Fetcher past its budget: it is
// fetched again once there is room for it. Partition 0's consumer holds
// a batch of about 30 KB; partition 1's first batch (50 records of 630
// bytes on the wire) comes whole on a share of 9 KB and is held as 38 KB.
func TestFetcherBatchLargerThanItsShareWaitsForRoom(t *testing.T) {
	_, addr, _, _ := cluster(t, 1, 2)
	row := func(p, i int) string { return fmt.Sprintf("p%d-%d-%s", p, i, strings.Repeat("x", 200)) }
	var held, big []string
	for i := range 40 {
		held = append(held, row(0, i))
	}
	for i := range 50 {
		big = append(big, row(1, i))
	}
	produceTo(t, addr, "t", 0, held...)
	produceTo(t, addr, "t", 1, big...)
	const budget = 64 << 10
	f, err := NewFetcher(FetcherConfig{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}, MaxBytes: budget, MaxWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p0 := f.Open("t", 0, 0)
	defer p0.Close()
	b, err := p0.Fetch(ctx, 5*time.Second)
	if err != nil || len(b.Records) != len(held) {
		t.Fatalf("partition 0: %v, %d records, want %d", err, len(b.Records), len(held))
	}
	p1 := f.Open("t", 1, 0)
	defer p1.Close()
	// Partition 1's answer comes meanwhile, however many requests it
	// takes; what is kept of it must fit beside partition 0's batch.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if h := f.Held(); h > budget {
			t.Fatalf("held %d bytes with partition 0's batch taken, budget %d", h, budget)
		}
		time.Sleep(time.Millisecond)
	}
	// Partition 0's batch released, partition 1's comes whole.
	if _, err := p0.Fetch(ctx, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := drain(ctx, p1, int64(len(big)), big); err != nil {
		t.Fatal(err)
	}
	if h := f.Held(); h > budget {
		t.Errorf("held %d bytes, budget %d", h, budget)
	}
}

// produceBacklog writes batches batches of 20 records of about 900
// bytes to partition 0 of t (18 kB a batch, over backlogFetcher's share)
// and returns the values.
func produceBacklog(t *testing.T, addr string, batches int) []string {
	t.Helper()
	var values []string
	for b := range batches {
		var vs []string
		for i := range 20 {
			vs = append(vs, fmt.Sprintf("%d-%d-%s", b, i, strings.Repeat("y", 900)))
		}
		values = append(values, vs...)
		produceTo(t, addr, "t", 0, vs...)
	}
	return values
}

// backlogFetcher is a Fetcher with a 16 KiB partition share and the
// broker wait maxWait, closed when the test ends.
func backlogFetcher(t *testing.T, addr string, maxWait time.Duration) *Fetcher {
	t.Helper()
	f, err := NewFetcher(FetcherConfig{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}, MaxWait: maxWait, PartitionMaxBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// A partition with a backlog is not held behind the broker's wait on
// idle ones: with a 5 s wait and 20 idle partitions, 30 batches of a busy
// one come in far less than 30 waits.
func TestFetcherBusyPartitionDoesNotWaitOnIdleOnes(t *testing.T) {
	const parts = 21
	_, addr, _, _ := cluster(t, 1, parts)
	values := produceBacklog(t, addr, 30)
	f := backlogFetcher(t, addr, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for p := 1; p < parts; p++ {
		defer f.Open("t", p, 0).Close()
	}
	busy := f.Open("t", 0, 0)
	defer busy.Close()
	start := time.Now()
	fetches := 0
	for busy.Offset() < int64(len(values)) {
		b, err := busy.Fetch(ctx, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		fetches++
		time.Sleep(5 * time.Millisecond) // the consumer's work
		if len(b.Records) == 0 {
			t.Fatalf("an empty batch at %d after 10 s", busy.Offset())
		}
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("%d batches took %v: the busy partition waited on the idle ones", fetches, took)
	}
	if fetches < 5 {
		t.Errorf("only %d fetches: the test wants many batches", fetches)
	}
}

// An idle partition's new record is not held behind a busy partition's
// batch that its consumer has not taken: with a 3 s broker wait it comes
// in well under the wait. (The source used to hold the request for the
// idle partitions back for up to the broker's wait: at 1,024 partitions
// fed 10,000 records a second in all, record → prediction was 100 ms at
// the median and 1 s at the 99th percentile.)
func TestFetcherIdlePartitionIsNotHeldBehindAnUntakenBatch(t *testing.T) {
	_, addr, _, _ := cluster(t, 1, 2)
	produceBacklog(t, addr, 10)
	f := backlogFetcher(t, addr, 3*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	busy := f.Open("t", 0, 0)
	defer busy.Close()
	if _, err := busy.Fetch(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	idle := f.Open("t", 1, 0)
	defer idle.Close()
	// The busy partition's next batch is fetched and left untaken, with
	// records behind it; the idle one's first fetch finds nothing.
	time.Sleep(200 * time.Millisecond)
	for i := range 5 {
		produceTo(t, addr, "t", 1, fmt.Sprint("late ", i))
		start := time.Now()
		for idle.Offset() <= int64(i) {
			if _, err := idle.Fetch(ctx, 10*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("record %d of the idle partition took %v to come, with the busy partition's batch untaken", i, took)
		}
	}
}

// Batches larger than a partition's share still come, whichever
// partitions they are on.
func TestFetcherDeliversBatchesLargerThanTheShare(t *testing.T) {
	const parts = 6
	_, addr, _, _ := cluster(t, 1, parts)
	values := make([][]string, parts)
	for p := range parts {
		for b := range 3 {
			var vs []string
			for i := range 30 {
				vs = append(vs, fmt.Sprintf("p%d-%d-%s", p, b*30+i, strings.Repeat("w", 100)))
			}
			values[p] = append(values[p], vs...)
			produceTo(t, addr, "t", p, vs...) // 9 KB, a share is 1 KiB
		}
	}
	f, err := NewFetcher(FetcherConfig{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}, PartitionMaxBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := drainAll(ctx, f, values, 0); err != nil {
		t.Fatal(err)
	}
}

// Read committed through a Fetcher: aborted records and markers are
// dropped, as a Reader drops them, and the same holds uncommitted.
func TestFetcherReadsCommitted(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addr := b.Addr()
	transactions(t, addr)
	for _, uncommitted := range []bool{false, true} {
		f, err := NewFetcher(FetcherConfig{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}, ReadUncommitted: uncommitted, PartitionMaxBytes: 300})
		if err != nil {
			t.Fatal(err)
		}
		p := f.Open("t", 0, kafka.FirstOffset)
		var got []string
		skipped := 0
		for p.Offset() < 16 { // 12 records, 4 markers
			b, err := p.Fetch(context.Background(), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range b.Records {
				got = append(got, string(r.Value))
			}
			skipped += b.Skipped
		}
		p.Close()
		f.Close()
		want, wantSkipped := "[p1 p2 b1 b2 p3 c1 p4]", 9
		if uncommitted {
			want, wantSkipped = "[p1 p2 a1 a2 b1 b2 p3 c1 d1 d2 d3 p4]", 4
		}
		if fmt.Sprint(got) != want || skipped != wantSkipped {
			t.Errorf("uncommitted=%v: %v skipping %d, want %s skipping %d", uncommitted, got, skipped, want, wantSkipped)
		}
	}
}

// SetOffset drops what was fetched ahead; an offset outside the log comes
// back as *OutOfRangeError with its bounds.
func TestFetcherSetOffsetAndOutOfRange(t *testing.T) {
	_, addr, _, _ := cluster(t, 1, 2)
	var vs []string
	for i := range 30 {
		vs = append(vs, fmt.Sprintf("v%d", i))
	}
	produceTo(t, addr, "t", 1, vs[:10]...)
	produceTo(t, addr, "t", 1, vs[10:20]...)
	produceTo(t, addr, "t", 1, vs[20:]...)
	f, err := NewFetcher(FetcherConfig{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}, PartitionMaxBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	p := f.Open("t", 1, 0)
	defer p.Close()
	b, err := p.Fetch(ctx, time.Second)
	if err != nil || len(b.Records) != 10 || b.Next != 10 {
		t.Fatalf("first batch: %v, %+v", err, b)
	}
	time.Sleep(100 * time.Millisecond) // the next batch is fetched ahead
	p.SetOffset(3)
	b, err = p.Fetch(ctx, time.Second)
	if err != nil || len(b.Records) == 0 || b.Records[0].Offset != 3 || string(b.Records[0].Value) != "v3" {
		t.Fatalf("after SetOffset(3): %v, %+v", err, b)
	}
	p.SetOffset(1000)
	_, err = p.Fetch(ctx, time.Second)
	var oor *OutOfRangeError
	if !errors.As(err, &oor) || oor.Offset != 1000 || oor.LogStart != 0 || oor.LogEnd != 30 || !errors.Is(err, kafka.OffsetOutOfRange) {
		t.Fatalf("got %v, want out of range [0, 30) at 1000", err)
	}
	p.SetOffset(kafka.LastOffset)
	b, err = p.Fetch(ctx, 50*time.Millisecond)
	if err != nil || len(b.Records) != 0 || p.Offset() != 30 {
		t.Fatalf("at the end: %v, %+v, offset %d", err, b, p.Offset())
	}
}

// A partition whose leader moves is read on from its new leader.
func TestFetcherFollowsALeaderThatMoves(t *testing.T) {
	c, addr, _, _ := cluster(t, 2, 2)
	var vs []string
	for i := range 20 {
		vs = append(vs, fmt.Sprintf("v%d", i))
	}
	produceTo(t, addr, "t", 0, vs[:10]...)
	f, err := NewFetcher(FetcherConfig{Addr: kafka.TCP(addr), Transport: &kafka.Transport{MetadataTTL: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := f.Open("t", 0, 0)
	defer p.Close()
	if err := drain(ctx, p, 10, vs); err != nil {
		t.Fatal(err)
	}
	from := c.LeaderFor("t", 0)
	if err := c.MoveTopicPartition("t", 0, 1-from); err != nil {
		t.Fatal(err)
	}
	produceTo(t, addr, "t", 0, vs[10:]...)
	for p.Offset() < 20 {
		b, err := p.Fetch(ctx, 100*time.Millisecond)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			continue // the old leader's refusals, until the move is known
		}
		for _, r := range b.Records {
			if string(r.Value) != vs[r.Offset] {
				t.Fatalf("offset %d: %q", r.Offset, r.Value)
			}
		}
	}
}

// TestFetchUntilStopsWaitingWhenWoken: a partition that gets nothing to
// read — here the fetcher's budget is held by another partition's batch,
// as when the member's exactly-once round holds partitions that joined it —
// waits its maxWait, unless its wake channel closes first: the round
// began and waits for this partition.
func TestFetchUntilStopsWaitingWhenWoken(t *testing.T) {
	_, addr, _, _ := cluster(t, 1, 2)
	var rows []string
	for i := range 40 {
		rows = append(rows, fmt.Sprintf("p0-%d-%s", i, strings.Repeat("x", 200)))
	}
	produceTo(t, addr, "t", 0, rows...)
	f, err := NewFetcher(FetcherConfig{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}, MaxBytes: 4 << 10, MaxWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p1 := f.Open("t", 1, 0)
	defer p1.Close()
	if _, err := p1.Fetch(ctx, 100*time.Millisecond); err != nil { // the start resolved
		t.Fatal(err)
	}
	p0 := f.Open("t", 0, 0)
	defer p0.Close()
	if b, err := p0.Fetch(ctx, 5*time.Second); err != nil || len(b.Records) == 0 {
		t.Fatalf("partition 0: %v", err)
	} // and held: not released until its next fetch
	if _, err := p1.Fetch(ctx, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	wake := make(chan struct{})
	time.AfterFunc(100*time.Millisecond, func() { close(wake) })
	t0 := time.Now()
	b, err := p1.FetchUntil(ctx, 5*time.Second, wake)
	if err != nil || len(b.Records) != 0 {
		t.Fatalf("woken fetch: %v, %d records", err, len(b.Records))
	}
	if took := time.Since(t0); took > 2*time.Second {
		t.Fatalf("woken after 100 ms, the fetch returned after %v", took)
	}
}

// TestPlanAllocatesNothing: planning a request over 1,024 partitions
// reuses its list of the partitions to ask for. Made for each plan, it
// was an eighth of a member's allocations at 1,024 partitions.
func TestPlanAllocatesNothing(t *testing.T) {
	f := &Fetcher{cfg: FetcherConfig{MaxBytes: 8 << 20, PartitionMaxBytes: 1 << 20, MaxWait: 500 * time.Millisecond}}
	s := &source{f: f}
	for i := range 1024 {
		s.parts = append(s.parts, &Partition{f: f, id: i, src: s, end: 100, lastStable: 100, logStart: 0})
	}
	asks := make([]ask, 0, len(s.parts))
	plan := func() {
		if _, ok := s.plan(&asks); !ok || len(asks) == 0 {
			t.Fatal("the plan asked for no partition")
		}
		for _, a := range asks {
			a.p.inflight = false
		}
		f.used = 0
	}
	plan()
	if n := testing.AllocsPerRun(100, plan); n != 0 {
		t.Errorf("a plan allocates %.0f times, want 0", n)
	}
}
