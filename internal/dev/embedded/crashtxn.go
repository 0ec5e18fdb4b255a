package embedded

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// openTxn is a transaction a killed broker left open in one partition's
// log: transactional data of the producer and no marker after it.
type openTxn struct {
	topic     string
	partition int32
	pid       int64
	epoch     int16
}

// crashOpenTxns finds, in a data directory a broker left without a clean
// shutdown, the transactions still open in a partition's log.
//
// kfake aborts them at load, but only in memory: it writes no abort
// marker. Readers that follow Kafka's protocol then hide the producer's
// next transaction too (a read_committed consumer drops the producer's
// batches from an aborted transaction's first offset until a marker of
// that producer, and the next marker is the later transaction's), and
// the next load after another kill pairs the old batches with that
// commit marker and shows them as committed: a replayed transaction's
// outputs are then read twice. Kafka's coordinator writes the abort
// markers when it takes over; finishCrashedTxns does it for kfake.
//
// It applies kfake's own rule (persist.go, loadPartitionFullReplay): a
// partition whose snapshot.json matches its segments was saved by a
// clean shutdown and is skipped; otherwise a data batch flagged in a
// transaction in the segment's index opens one for its producer until a
// control batch of that producer.
func crashOpenTxns(dir string) ([]openTxn, error) {
	parts, err := os.ReadDir(filepath.Join(dir, "partitions"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var open []openTxn
	for _, e := range parts {
		i := strings.LastIndexByte(e.Name(), '-')
		if !e.IsDir() || i < 0 {
			continue
		}
		topic, err1 := url.PathUnescape(e.Name()[:i])
		p, err2 := strconv.ParseInt(e.Name()[i+1:], 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		txns, err := partitionOpenTxns(filepath.Join(dir, "partitions", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("partition %s: %w", e.Name(), err)
		}
		for pid, epoch := range txns {
			open = append(open, openTxn{topic: topic, partition: int32(p), pid: pid, epoch: epoch})
		}
	}
	return open, nil
}

// partitionOpenTxns returns the producers with a transaction open in
// one partition's segments, with the epoch of their last batch.
func partitionOpenTxns(pdir string) (map[int64]int16, error) {
	entries, err := os.ReadDir(pdir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	for _, e := range entries {
		if base, ok := strings.CutSuffix(e.Name(), ".dat"); ok {
			if b, err := strconv.ParseInt(base, 10, 64); err == nil {
				bases = append(bases, b)
			}
		}
	}
	slices.Sort(bases)
	if cleanSnapshot(pdir, bases) {
		return nil, nil
	}
	open := make(map[int64]int16)
	for _, base := range bases {
		raw, err := os.ReadFile(filepath.Join(pdir, fmt.Sprintf("%d.dat", base)))
		if err != nil {
			return nil, err
		}
		idx, _ := os.ReadFile(filepath.Join(pdir, fmt.Sprintf("%d.idx", base)))
		// As kfake reads them: batches end to end, each 12 bytes of
		// offset and length then the rest; index entries of 15 bytes
		// whose last byte's low bit says the batch was in a transaction.
		for n := 0; len(raw) >= 12; n++ {
			size := 12 + int(binary.BigEndian.Uint32(raw[8:12]))
			if size < 12 || size > len(raw) {
				break
			}
			var b kmsg.RecordBatch
			if err := b.ReadFrom(raw[:size]); err != nil {
				break
			}
			raw = raw[size:]
			inTx := (n+1)*15 <= len(idx) && idx[n*15+14]&1 != 0
			switch {
			case b.Attributes&0x0020 != 0: // a control batch ends the producer's transaction
				delete(open, b.ProducerID)
			case inTx:
				open[b.ProducerID] = b.ProducerEpoch
			}
		}
	}
	return open, nil
}

// cleanSnapshot says whether the partition's snapshot.json describes its
// segments as they are, which kfake takes for a clean shutdown.
func cleanSnapshot(pdir string, bases []int64) bool {
	raw, err := os.ReadFile(filepath.Join(pdir, "snapshot.json"))
	if err != nil || len(bases) == 0 {
		return false
	}
	var snap struct {
		Segments []struct {
			BaseOffset int64 `json:"base_offset"`
			Size       int64 `json:"size"`
		} `json:"segments"`
	}
	if json.Unmarshal(raw, &snap) != nil || len(snap.Segments) != len(bases) {
		return false
	}
	for i, s := range snap.Segments {
		info, err := os.Stat(filepath.Join(pdir, fmt.Sprintf("%d.dat", bases[i])))
		if s.BaseOffset != bases[i] || err != nil || info.Size() != s.Size {
			return false
		}
	}
	return true
}

// finishCrashedTxns writes an abort marker into every partition where a
// kill left a transaction open, through a broker of its own on free ports
// that it then closes cleanly, before the broker clients see is started:
// no client can write to the producer between the abort it is told of and
// its marker. opts are the cluster's options without its ports.
func finishCrashedTxns(dir string, brokers int, opts []kfake.Opt) error {
	open, err := crashOpenTxns(dir)
	if err != nil || len(open) == 0 {
		return err
	}
	c, err := kfake.NewCluster(append(opts, kfake.Ports(make([]int, brokers)...))...)
	if err != nil {
		return err
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, o := range open {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		// The epoch kfake gave the producer when it aborted the
		// transaction at load, as Kafka's coordinator marks an abort
		// with the bumped epoch.
		m.ProducerID, m.ProducerEpoch, m.Committed = o.pid, o.epoch+1, false
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = o.topic, []int32{o.partition}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		resp, err := req.RequestWith(ctx, cl.Broker(int(c.LeaderFor(o.topic, o.partition))))
		if err != nil {
			return fmt.Errorf("abort marker for producer %d in %s/%d: %w", o.pid, o.topic, o.partition, err)
		}
		for _, rm := range resp.Markers {
			for _, rt := range rm.Topics {
				for _, rp := range rt.Partitions {
					if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
						return fmt.Errorf("abort marker for producer %d in %s/%d: %w", o.pid, o.topic, o.partition, err)
					}
				}
			}
		}
	}
	return nil
}
