// Package embedded runs an in-process Kafka-compatible broker (franz-go's
// kfake) on the loopback interface: the development broker of
// `streamlearner broker`, the one-command demo, and the integration tests.
//
// It speaks the Kafka wire protocol, so kafka-go and kcat talk to it as to
// a real cluster: topics, consumer groups, committed offsets with metadata,
// compacted topics. It binds 127.0.0.1 only. With a data directory it
// persists topics and group offsets across restarts.
package embedded

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
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
}

// Broker is a running embedded broker.
type Broker struct {
	c    *kfake.Cluster
	addr string
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
	opts := []kfake.Opt{
		kfake.Ports(cfg.Port),
		kfake.NumBrokers(1),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(cfg.Partitions),
		kfake.GroupMinSessionTimeout(cfg.GroupMinSessionTimeout),
		kfake.BrokerConfigs(map[string]string{
			"log.cleaner.backoff.ms": strconv.FormatInt(cfg.CompactionInterval.Milliseconds(), 10),
			"message.max.bytes":      strconv.Itoa(cfg.MaxMessageBytes),
		}),
	}
	if len(cfg.Topics) > 0 {
		opts = append(opts, kfake.SeedTopics(int32(cfg.Partitions), cfg.Topics...))
	}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start embedded broker: %w", err)
	}
	addrs := c.ListenAddrs()
	if len(addrs) == 0 {
		c.Close()
		return nil, fmt.Errorf("start embedded broker: no listener")
	}
	return &Broker{c: c, addr: addrs[0]}, nil
}

// Addr is the broker's host:port, for clients' bootstrap list.
func (b *Broker) Addr() string { return b.addr }

// Close stops the broker, flushing its data directory if it has one.
func (b *Broker) Close() { b.c.Close() }
