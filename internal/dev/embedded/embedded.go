// Package embedded runs an in-process Kafka-compatible broker (franz-go's
// kfake) on the loopback interface: the development broker of
// `streamlearner broker`, the one-command demo, and the integration tests.
//
// It speaks the Kafka wire protocol, so kafka-go and kcat talk to it as to
// a real cluster: topics, consumer groups, committed offsets with metadata,
// compacted topics. It binds 127.0.0.1 only. With a data directory it
// keeps topics (auto-created ones too), records and group offsets across
// restarts, a kill -9 included; records reach the disk through the page
// cache, without an fsync per batch, so a machine crash can lose the
// newest ones. Consumer groups expire dead members and keep members whose
// join or sync the coordinator holds, as Kafka does (kfake alone does
// neither; see reaper).
package embedded

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config says how to start the broker. The zero value starts an in-memory
// broker on a free port.
type Config struct {
	// Port to listen on, on 127.0.0.1; 0 picks a free port.
	Port int
	// DataDir persists data and group offsets when set; empty keeps
	// everything in memory.
	DataDir string
	// Partitions of an auto-created topic; default 4.
	Partitions int
	// Topics to create at start with Partitions partitions each.
	Topics []string
	// CompactionInterval is how often compacted topics are cleaned; default
	// 10 s (Kafka's default of an hour would let a test's compacted topic
	// grow unchecked).
	CompactionInterval time.Duration
	// MaxMessageBytes is the largest record batch the broker accepts;
	// default 1 MiB, Kafka's.
	MaxMessageBytes int
	// GroupMinSessionTimeout lets tests use short group session timeouts;
	// default 1 s.
	GroupMinSessionTimeout time.Duration
	// Brokers is the number of brokers in the cluster, each on a port of
	// its own (the first on Port); default 1. More than one lets tests
	// move partition leaders and coordinators between them.
	Brokers int
}

// Broker is a running embedded broker.
type Broker struct {
	c     *kfake.Cluster
	r     *reaper
	addr  string
	close sync.Once
}

// Start starts a broker.
func Start(cfg Config) (*Broker, error) {
	if cfg.Partitions <= 0 {
		cfg.Partitions = 4
	}
	if cfg.CompactionInterval <= 0 {
		cfg.CompactionInterval = 10 * time.Second
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 1 << 20
	}
	if cfg.GroupMinSessionTimeout <= 0 {
		cfg.GroupMinSessionTimeout = time.Second
	}
	// No kfake.AllowAutoTopicCreation: its auto-create path records the
	// topic in memory only, and the topic list reaches the data directory
	// on the next CreateTopics or a clean shutdown, so after a kill -9 the
	// topic was gone while group offsets into it survived. autoCreate
	// below routes auto-creation through CreateTopic, which persists it.
	// Ports fixes the broker count: the first on cfg.Port, any others
	// on free ports.
	ports := make([]int, max(1, cfg.Brokers))
	ports[0] = cfg.Port
	opts := []kfake.Opt{
		kfake.DefaultNumPartitions(cfg.Partitions),
		kfake.GroupMinSessionTimeout(cfg.GroupMinSessionTimeout),
		kfake.BrokerConfigs(map[string]string{
			"log.cleaner.backoff.ms": strconv.FormatInt(cfg.CompactionInterval.Milliseconds(), 10),
			"message.max.bytes":      strconv.Itoa(cfg.MaxMessageBytes),
		}),
	}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
		if err := finishCrashedTxns(cfg.DataDir, len(ports), opts); err != nil {
			return nil, fmt.Errorf("start embedded broker: abort the transactions a kill left open: %w", err)
		}
	}
	c, err := kfake.NewCluster(append(opts, kfake.Ports(ports...))...)
	if err != nil {
		return nil, fmt.Errorf("start embedded broker: %w", err)
	}
	// Not kfake.SeedTopics: seeds are skipped when the data directory
	// already holds a cluster, so a topic added to Topics later would
	// never be created there.
	for _, t := range cfg.Topics {
		if err := createTopic(c, t, cfg.Partitions); err != nil {
			c.Close()
			return nil, fmt.Errorf("start embedded broker: create topic %q: %w", t, err)
		}
	}
	c.ControlKey(int16(kmsg.Metadata), autoCreate(c))
	addrs := c.ListenAddrs()
	if len(addrs) == 0 {
		c.Close()
		return nil, fmt.Errorf("start embedded broker: no listener")
	}
	return &Broker{c: c, r: startReaper(c, addrs[0], cfg.GroupMinSessionTimeout/4), addr: addrs[0]}, nil
}

// autoCreate is a control hook on Metadata requests: before the broker
// answers one that asks for missing topics to be created, it creates them
// as a CreateTopics request would (default partition count), which writes
// the topic list to the data directory at once. It only observes: the
// request is then answered as usual, finding the topics in place. Like
// kfake's own auto-creation it honours the request's flag, so clients
// that ask without it get UNKNOWN_TOPIC_OR_PARTITION for a missing topic.
//
// Control functions run off the cluster's loop, which keeps serving
// CreateTopic's admin call while the request waits.
func autoCreate(c *kfake.Cluster) func(kmsg.Request) (kmsg.Response, error, bool) {
	return func(r kmsg.Request) (kmsg.Response, error, bool) {
		req, ok := r.(*kmsg.MetadataRequest)
		if !ok || !req.AllowAutoTopicCreation {
			return nil, nil, false
		}
		for _, rt := range req.Topics {
			if rt.Topic != nil && *rt.Topic != "" && c.TopicInfo(*rt.Topic) == nil {
				// An invalid name fails here and is then reported
				// unknown by the request itself.
				createTopic(c, *rt.Topic, -1)
			}
		}
		return nil, nil, false
	}
}

// createTopic creates topic unless it exists; partitions < 1 means the
// broker's default.
func createTopic(c *kfake.Cluster, topic string, partitions int) error {
	err := c.CreateTopic(topic, int32(partitions), nil)
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	return err
}

// Cluster is the broker's kfake cluster, for tests that inject faults
// (Cluster.Fault), move leaders or remove brokers.
func (b *Broker) Cluster() *kfake.Cluster { return b.c }

// Addr is the broker's host:port, for clients' bootstrap list.
func (b *Broker) Addr() string { return b.addr }

// Close stops the broker, flushing its data directory if it has one.
// Closing it again does nothing.
func (b *Broker) Close() {
	b.close.Do(func() {
		b.r.stop() // first: it waits on the cluster
		b.c.Close()
	})
}
