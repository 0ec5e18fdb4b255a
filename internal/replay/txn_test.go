package replay

import (
	"context"
	"fmt"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/learners"
)

// A replay reads a topic as the service does: committed, so the records of
// aborted transactions are not played and transaction markers are never
// decoded (they would be bad records); reading uncommitted it plays the
// aborted records too, still without the markers.
func TestReplayReadsCommitted(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"tx"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := func(i int) []byte { return []byte(fmt.Sprintf("%+d 1:%g 2:1", 2*(i%2)-1, float64(i%5)/5)) }
	txn := func(id string, commit bool, from int) {
		var vs [][]byte
		for i := range 10 {
			vs = append(vs, rec(from+i))
		}
		if err := embedded.ProduceTransaction(ctx, b.Addr(), "tx", 0, id, vs, commit); err != nil {
			t.Fatal(err)
		}
	}
	txn("a", true, 0)
	txn("b", false, 10)
	txn("a", false, 20)
	txn("b", true, 30)
	w := &kafka.Writer{Transport: &kafka.Transport{}, Addr: kafka.TCP(b.Addr()), Topic: "tx", RequiredAcks: kafka.RequireAll}
	if err := w.WriteMessages(ctx, kafka.Message{Value: rec(40)}, kafka.Message{Value: rec(41)}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	k, _ := learners.ParseKernel("rbf:gamma=0.5")
	cfg := Config{Learners: []string{"perceptron"}, Kernel: k, Seed: 1, Detectors: []string{}}
	for _, c := range []struct {
		uncommitted bool
		rounds      int64
	}{{false, 22}, {true, 42}} {
		rep, err := Run(ctx, Source{Conn: kafkaconn.Config{Brokers: []string{b.Addr()}}, Topic: "tx", ReadUncommitted: c.uncommitted}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := rep.Partitions[0]
		if p.Rounds != c.rounds || len(p.Bad) != 0 {
			t.Fatalf("uncommitted=%v: %d rounds (want %d), bad %v", c.uncommitted, p.Rounds, c.rounds, p.Bad)
		}
	}
}
