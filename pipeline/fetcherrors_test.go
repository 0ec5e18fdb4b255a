package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
)

// A fetch the broker answers with an error (here a corrupt batch, as the
// fetcher reports a bad CRC) is counted and retried; the partition then
// goes on, and every record is predicted.
func TestFetchErrorsAreCountedAndRetried(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out", "in.dlq"), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const bad = 3
	var failed atomic.Int64
	c.ControlKey(int16(kmsg.Fetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if failed.Load() >= bad {
			return nil, nil, false
		}
		failed.Add(1)
		req := r.(*kmsg.FetchRequest)
		res := req.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range req.Topics {
			t := kmsg.NewFetchResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewFetchResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, kerr.CorruptMessage.Code
				t.Partitions = append(t.Partitions, p)
			}
			res.Topics = append(res.Topics, t)
		}
		return res, nil, true
	})
	addr := c.ListenAddrs()[0]
	w := &kafka.Writer{Transport: &kafka.Transport{}, Addr: kafka.TCP(addr), Topic: "in", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	const n = 50
	var msgs []kafka.Message
	for i := range n {
		msgs = append(msgs, kafka.Message{Value: fmt.Appendf(nil, `{"label": %d, "features": {"1": %g}}`, 1-2*(i%2), float64(i%7+1)/7)})
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	cfg := testConfigAt(t, addr, "rbp:budget=10")
	cfg.Metrics = NewMetrics(nil)
	runMember(t, cfg)
	waitFor(t, "every prediction", 30*time.Second, func() bool { return testutil.ToFloat64(cfg.Metrics.Produced) >= n })
	if got := testutil.ToFloat64(cfg.Metrics.FetchErrors); got != bad {
		t.Errorf("fetch errors counted %v, want %d", got, bad)
	}
}

// A record batch that every fetch finds corrupt (damaged in the broker's
// log, not on the way) is dead-lettered whole after corruptRetries
// fetches, and the partition goes on from the batch after it: the records
// around it are all predicted, and the committed offset passes it.
func TestCorruptBatchIsDeadLetteredAndSkipped(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out", "in.dlq"), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bad := corruptMiddleBatch(ctx, t, c, "in", func(b, i int) kafka.Message {
		return kafka.Message{Value: fmt.Appendf(nil, `{"label": %d, "features": {"1": %g}}`, 1-2*(i%2), float64(b*10+i+1)/30)}
	})
	cfg := testConfigAt(t, addr, "rbp:budget=10")
	cfg.Metrics = NewMetrics(nil)
	cfg.CheckpointEvery = 1
	stop, _ := runMember(t, cfg)
	waitFor(t, "the records around the batch predicted", 30*time.Second, func() bool { return testutil.ToFloat64(cfg.Metrics.Produced) >= 20 })
	dl, h := oneDeadLetter(t, addr)
	if h[HeaderError] != string(ReasonCorruptBatch) || h[HeaderSourceOffset] != "10" || !bytes.Equal(dl.Value, bad) {
		t.Errorf("dead letter %v, %d bytes; want %s at offset 10 holding the batch's %d bytes", h, len(dl.Value), ReasonCorruptBatch, len(bad))
	}
	if got := testutil.ToFloat64(cfg.Metrics.FetchErrors); got < corruptRetries {
		t.Errorf("fetch errors counted %v, want at least %d", got, corruptRetries)
	}
	waitFor(t, "the offset committed past the batch", 10*time.Second, func() bool {
		oc := &kafka.Client{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}}
		resp, err := oc.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: "g", Topics: map[string][]int{"in": {0}}})
		return err == nil && len(resp.Topics["in"]) == 1 && resp.Topics["in"][0].CommittedOffset == 30
	})
	stop()
	if got := testutil.ToFloat64(cfg.Metrics.Produced); got != 20 {
		t.Errorf("%v predictions, want 20 (the batch's 10 records are its dead letter)", got)
	}
}

// corruptMiddleBatch writes three batches of 10 records to partition 0
// of topic (offsets 0–9, 10–19 and 20–29; record i of batch b from
// value), then makes the broker answer every fetch of the topic alone
// with the log's batches, the second made corrupt (a bit flipped, so its
// CRC fails), and returns that batch.
func corruptMiddleBatch(ctx context.Context, t *testing.T, c *kfake.Cluster, topic string, value func(b, i int) kafka.Message) []byte {
	t.Helper()
	return corruptBatchOf(ctx, t, c, topic, 1, value)
}

// corruptBatchOf is corruptMiddleBatch with batch which (0, 1 or 2) made
// corrupt.
func corruptBatchOf(ctx context.Context, t *testing.T, c *kfake.Cluster, topic string, which int, value func(b, i int) kafka.Message) []byte {
	t.Helper()
	addr := c.ListenAddrs()[0]
	for b := range 3 {
		w := &kafka.Writer{Transport: &kafka.Transport{}, Addr: kafka.TCP(addr), Topic: topic, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: 10}
		var msgs []kafka.Message
		for i := range 10 {
			msgs = append(msgs, value(b, i))
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	// The log's batches as the broker keeps them, the second made corrupt:
	// the broker answers fetches with them from here on.
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(int16(kmsg.Fetch), 11) // by topic name
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(versions))
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxBytes, req.MaxWaitMillis = 11, 1<<20, 100
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	res, err := req.RequestWith(ctx, cl)
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	var batches [][]byte
	for raw := res.Topics[0].Partitions[0].RecordBatches; len(raw) > 12; {
		size := 12 + int(binary.BigEndian.Uint32(raw[8:]))
		batches = append(batches, raw[:size])
		raw = raw[size:]
	}
	if len(batches) != 3 || binary.BigEndian.Uint64(batches[1]) != 10 || binary.BigEndian.Uint64(batches[2]) != 20 {
		t.Fatalf("%d batches in the log; want 3, at 0, 10 and 20", len(batches))
	}
	bad := batches[which]
	bad[len(bad)-3] ^= 0x40
	c.ControlKey(int16(kmsg.Fetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.FetchRequest)
		if len(req.Topics) != 1 || req.Topics[0].Topic != topic || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].FetchOffset >= 30 {
			return nil, nil, false // the broker's own answer
		}
		rp := req.Topics[0].Partitions[0]
		res := req.ResponseKind().(*kmsg.FetchResponse)
		res.Version = req.Version
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = topic
		p := kmsg.NewFetchResponseTopicPartition()
		p.Partition, p.HighWatermark, p.LastStableOffset = rp.Partition, 30, 30
		for k, b := range batches {
			if int64(k*10+10) > rp.FetchOffset {
				p.RecordBatches = append(p.RecordBatches, b...)
			}
		}
		rt.Partitions = append(rt.Partitions, p)
		res.Topics = append(res.Topics, rt)
		return res, nil, true
	})
	return bad
}

// A corrupt batch on the label topic: its labels cannot be read, ever.
// After corruptRetries fetches in a row it is dead-lettered whole (source
// the label topic) and the label offset passes it, as an input batch's
// does; before, the partition retried it for ever, learning nothing more
// while it went on predicting.
func TestCorruptLabelBatchIsDeadLetteredAndSkipped(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	addr, bad, cfg := labelTopicWithCorruptBatch(t, 1)
	runMember(t, cfg)
	waitFor(t, "the labels around the batch learned", 30*time.Second, func() bool { return testutil.ToFloat64(cfg.Metrics.Learned.WithLabelValues("0")) >= 20 })
	dl, h := oneDeadLetter(t, addr)
	if h[HeaderError] != string(ReasonCorruptBatch) || h[HeaderSourceTopic] != "labels" || h[HeaderSourceOffset] != "10" || !bytes.Equal(dl.Value, bad) {
		t.Errorf("dead letter %v, %d bytes; want %s of labels at offset 10 holding the batch's %d bytes", h, len(dl.Value), ReasonCorruptBatch, len(bad))
	}
	waitFor(t, "the label offset committed past the batch", 10*time.Second, func() bool {
		oc := &kafka.Client{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}}
		resp, err := oc.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: "g", Topics: map[string][]int{"labels": {0}}})
		return err == nil && len(resp.Topics["labels"]) == 1 && resp.Topics["labels"][0].CommittedOffset == 30
	})
	if got := testutil.ToFloat64(cfg.Metrics.Learned.WithLabelValues("0")); got != 20 {
		t.Errorf("%v labels learned, want 20 (the batch's 10 are its dead letter)", got)
	}
}

// A corrupt first batch of labels, with no label position committed
// yet (the partition stands at the symbolic start): dead-lettered as at
// any other offset. Before, the comparison with the unresolved start
// never matched and the batch was fetched again for ever, nothing
// learned.
func TestCorruptFirstLabelBatchIsDeadLettered(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	addr, bad, cfg := labelTopicWithCorruptBatch(t, 0)
	runMember(t, cfg)
	waitFor(t, "the labels after the batch learned", 30*time.Second, func() bool { return testutil.ToFloat64(cfg.Metrics.Learned.WithLabelValues("0")) >= 20 })
	dl, h := oneDeadLetter(t, addr)
	if h[HeaderError] != string(ReasonCorruptBatch) || h[HeaderSourceTopic] != "labels" || h[HeaderSourceOffset] != "0" || !bytes.Equal(dl.Value, bad) {
		t.Errorf("dead letter %v, %d bytes; want %s of labels at offset 0 holding the batch's %d bytes", h, len(dl.Value), ReasonCorruptBatch, len(bad))
	}
}

// labelTopicWithCorruptBatch starts a broker whose input topic holds 30
// events and whose label topic holds their labels in three batches of 10,
// batch which corrupt; it returns the broker's address, the corrupt
// batch's bytes and a member configured to read both.
func labelTopicWithCorruptBatch(t *testing.T, which int) (string, []byte, Config) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out", "in.dlq", "labels"), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	w := &kafka.Writer{Transport: &kafka.Transport{}, Addr: kafka.TCP(addr), Topic: "in", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	var recs []kafka.Message
	for i := range 30 {
		recs = append(recs, kafka.Message{Time: base.Add(time.Duration(i) * time.Second), Value: fmt.Appendf(nil, `{"id": "r%d", "x": %g}`, i, float64(i%7+1)/7)})
	}
	if err := w.WriteMessages(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	bad := corruptBatchOf(ctx, t, c, "labels", which, func(b, i int) kafka.Message {
		class := map[bool]string{true: "UP", false: "DOWN"}[i%2 == 0]
		return kafka.Message{Time: base.Add(time.Minute + time.Duration(b*10+i)*time.Second), Value: fmt.Appendf(nil, `{"id": "r%d", "class": %q}`, b*10+i, class)}
	})
	cfg := testConfigAt(t, addr, "rbp:budget=10")
	cfg.Model.Events, cfg.Model.Event, cfg.Model.Labels = true, codec.EventConfig{LabelField: "class", KeyField: "id"}, codec.LabelMap{Positive: []string{"UP"}}
	cfg.LabelTopic = "labels"
	cfg.Metrics = NewMetrics(nil)
	return addr, bad, cfg
}

// oneDeadLetter reads the one dead letter of partition 0 and its headers.
func oneDeadLetter(t *testing.T, addr string) (fetch.Record, map[string]string) {
	t.Helper()
	dl := readFetched(t, addr, "in.dlq", 0, 1, false, 10*time.Second)
	if len(dl) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dl))
	}
	h := map[string]string{}
	for _, hd := range dl[0].Headers {
		h[hd.Key] = string(hd.Value)
	}
	return dl[0], h
}
