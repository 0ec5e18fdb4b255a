package pipeline

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	kafka "github.com/segmentio/kafka-go"
)

// TestMissingInputTopicIsWaitedForNotCreated: a --topic that does not
// exist is never created, --auto-create or not (that makes outputs only):
// the member says so, is not ready with the reason, and joins once the
// topic is made, serving the records written to it.
func TestMissingInputTopicIsWaitedForNotCreated(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in")
	cfg := testConfig(t, b, "perceptron")
	cfg.Topic, cfg.AutoCreateTopics = "inn", true
	logs := &syncWriter{w: &bytes.Buffer{}}
	cfg.Log = zerolog.New(logs)
	cfg.Metrics = NewMetrics(nil)
	stop, _ := runMember(t, cfg)
	defer stop()
	waitFor(t, "the member to say why it waits", 20*time.Second, func() bool {
		return strings.Contains(cfg.Metrics.Waiting(), `input topic "inn" does not exist`)
	})
	// Longer than the member takes to look again.
	time.Sleep(inputPoll + time.Second)
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
	md, err := cl.Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{"inn", "out", "inn.dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range md.Topics {
		created := tp.Error == nil && len(tp.Partitions) > 0
		if tp.Name == "inn" && (created || !errors.Is(tp.Error, kafka.UnknownTopicOrPartition)) {
			t.Errorf("the input topic was created (%v, %d partitions)", tp.Error, len(tp.Partitions))
		}
		if tp.Name != "inn" && !created {
			t.Errorf("output topic %s not created: %v", tp.Name, tp.Error)
		}
	}
	if cfg.Metrics.Ready() {
		t.Error("ready without an input topic")
	}
	logs.mu.Lock()
	log := logs.w.String()
	logs.mu.Unlock()
	if n := strings.Count(log, "the INPUT topic does not exist"); n != 1 || !strings.Contains(log, `"existing_topics":["in","inn.dlq","out"]`) {
		t.Errorf("%d lines about the missing input topic, want 1 naming the existing ones:\n%s", n, log)
	}

	if _, err := cl.CreateTopics(context.Background(), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "inn", NumPartitions: 2, ReplicationFactor: 1}}}); err != nil {
		t.Fatal(err)
	}
	var msgs []kafka.Message
	for i := range 20 {
		msgs = append(msgs, kafka.Message{Value: goodRecord(i)})
	}
	produce(t, b, "inn", msgs, &kafka.RoundRobin{})
	waitFor(t, "the member to serve the topic once it exists", 30*time.Second, func() bool {
		return cfg.Metrics.Ready() && cfg.Metrics.Waiting() == "" && len(readTopic(t, b, "out", 20, 5*time.Second)) == 20
	})
}
