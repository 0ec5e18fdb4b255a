package embedded

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ProduceTransaction writes values to one partition of topic in a single
// transaction of a transactional producer with id txnID, then commits it
// or, with commit false, aborts it. It is how tests (and anyone checking
// isolation) make transactional data: kafka-go cannot write transactions.
func ProduceTransaction(ctx context.Context, addr, topic string, partition int32, txnID string, values [][]byte, commit bool) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.TransactionalID(txnID),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic(topic),
	)
	if err != nil {
		return fmt.Errorf("transactional producer: %w", err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	for _, v := range values {
		r := &kgo.Record{Topic: topic, Partition: partition, Value: v}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			cl.EndTransaction(ctx, kgo.TryAbort)
			return fmt.Errorf("produce in transaction: %w", err)
		}
	}
	end := kgo.TryAbort
	if commit {
		end = kgo.TryCommit
	}
	if err := cl.EndTransaction(ctx, end); err != nil {
		return fmt.Errorf("end transaction: %w", err)
	}
	return nil
}
