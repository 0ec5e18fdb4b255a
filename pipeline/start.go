package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
)

// closedTries is how many probes in a row must find the brokers closing
// the connection at the first request before the start fails: a
// listener that wants TLS or SASL does it every time, a broker starting
// up seldom.
const closedTries = 3

// whyNoAnswer probes the brokers that did not answer a metadata request
// for the cause (kafkaconn.Config.Probe), which it returns. It says to
// stop, the cause being the error to return, when waiting cannot help:
// credentials or a TLS handshake refused, or the connection closed
// closedTries times in a row (closed counts them).
func (m *member) whyNoAnswer(ctx context.Context, closed *int) (bool, error) {
	perr := m.cfg.Conn.Probe(ctx)
	var ce *kafkaconn.ConnError
	if !errors.As(perr, &ce) {
		*closed = 0
		return false, perr
	}
	if ce.Cause == kafkaconn.CauseClosed {
		*closed++
	} else {
		*closed = 0
	}
	if ce.Final() || *closed >= closedTries {
		return true, fmt.Errorf("brokers %v: %w", m.cfg.Conn.Brokers, ce)
	}
	return false, ce
}

// prepare checks, before the member joins its group, what would otherwise
// fail later and quietly: that the brokers answer (within
// Config.ConnectTimeout), that the input topic exists (waiting for it
// until ctx ends), that the output and dead-letter topics exist (unless
// they may be created), and how large a record each of them takes.
func (m *member) prepare(ctx context.Context) error {
	cfg := m.cfg
	wctx := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	md, err := m.metadata(ctx)
	if err != nil {
		return err
	}
	tp := topicsOf(md)
	if lt := cfg.LabelTopic; lt != "" && !tp.exists[lt] {
		return fmt.Errorf("label topic %q does not exist: create it with as many partitions as %q, or fix --label-topic", lt, cfg.Topic)
	}
	if err := tp.coPartitioned(cfg); err != nil {
		return err
	}
	if err := m.ensureOutputTopics(ctx, tp); err != nil {
		return err
	}
	if !tp.exists[cfg.Topic] {
		n, err := m.awaitInput(wctx)
		if err != nil || wctx.Err() != nil {
			return err
		}
		tp.exists[cfg.Topic], tp.partitions[cfg.Topic] = true, n
		if err := tp.coPartitioned(cfg); err != nil {
			return err
		}
		// The checks below ask the brokers again, with the time the
		// first answer had.
		cancel()
		ctx, cancel = context.WithTimeout(wctx, cfg.ConnectTimeout)
		defer cancel()
	}
	m.readRecordLimits(ctx, md, tp)
	return nil
}

// metadata asks the brokers about the member's topics until they answer
// or ctx ends; a broker that closes every connection, or refuses for
// good, ends it at once (whyNoAnswer).
func (m *member) metadata(ctx context.Context) (*kafka.MetadataResponse, error) {
	cfg := m.cfg
	topics := []string{cfg.Topic, cfg.OutputTopic, cfg.DLQTopic}
	if cfg.LabelTopic != "" {
		topics = append(topics, cfg.LabelTopic)
	}
	for closed := 0; ; {
		md, err := m.client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
		switch {
		case err == nil:
			return md, nil
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return nil, fmt.Errorf("brokers %v did not answer within %v (--connect-timeout): %w", cfg.Conn.Brokers, cfg.ConnectTimeout, err)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("reach brokers %v: %w", cfg.Conn.Brokers, err)
		}
		stop, cause := m.whyNoAnswer(ctx, &closed)
		if stop {
			return nil, cause
		}
		cfg.Log.Warn().Err(err).AnErr("cause", cause).Strs("brokers", cfg.Conn.Brokers).Msg("brokers do not answer yet; retrying")
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// topicState is what the metadata said of the member's topics: which
// exist (with partitions), and how many partitions each has.
type topicState struct {
	exists     map[string]bool
	partitions map[string]int
}

func topicsOf(md *kafka.MetadataResponse) topicState {
	tp := topicState{exists: map[string]bool{}, partitions: map[string]int{}}
	for _, t := range md.Topics {
		tp.exists[t.Name] = t.Error == nil && len(t.Partitions) > 0
		tp.partitions[t.Name] = len(t.Partitions)
	}
	return tp
}

// coPartitioned refuses a label topic whose partition count differs from
// the input's: co-partitioning is what puts a label beside its record,
// and a count that differs would send labels to other partitions'
// workers.
func (tp topicState) coPartitioned(cfg *Config) error {
	if lt := cfg.LabelTopic; lt != "" && tp.exists[cfg.Topic] && tp.partitions[lt] != tp.partitions[cfg.Topic] {
		return fmt.Errorf("label topic %q has %d partitions, input topic %q has %d: the label topic must be co-partitioned with the input (as many partitions, labels keyed as their records)",
			lt, tp.partitions[lt], cfg.Topic, tp.partitions[cfg.Topic])
	}
	return nil
}

// ensureOutputTopics creates the output and dead-letter topics that do
// not exist, with --auto-create, or refuses to start.
func (m *member) ensureOutputTopics(ctx context.Context, tp topicState) error {
	cfg := m.cfg
	var created []string
	for _, t := range []struct{ name, role, flag string }{
		{cfg.OutputTopic, "output", "--output-topic"}, {cfg.DLQTopic, "dead-letter", "--dlq-topic"},
	} {
		if tp.exists[t.name] {
			continue
		}
		if !cfg.AutoCreateTopics {
			return fmt.Errorf("%s topic %q does not exist: create it, fix %s, or pass --auto-create", t.role, t.name, t.flag)
		}
		// Created now, not at the first write: a tail of the predictions
		// can start at once, even while every record is dead-lettered.
		p := &producer{client: m.client, topic: t.name, autoCreate: true}
		if _, err := p.readLayout(ctx); err != nil && !errors.Is(err, kafka.LeaderNotAvailable) {
			return fmt.Errorf("%s topic %q does not exist and the brokers did not create it (auto.create.topics.enable?): create it, or fix %s: %w", t.role, t.name, t.flag, err)
		}
		created = append(created, t.name)
	}
	if len(created) > 0 {
		cfg.Log.Info().Strs("topics", created).Msg("created the missing output topics (--auto-create)")
	}
	return nil
}

// readRecordLimits sets the largest record the output and dead-letter
// topics take: the topic's max.message.bytes, else the broker's
// message.max.bytes, else Config.MaxMessageBytes.
func (m *member) readRecordLimits(ctx context.Context, md *kafka.MetadataResponse, tp topicState) {
	cfg := m.cfg
	brokerLimit := 0
	if len(md.Brokers) > 0 {
		brokerLimit = m.configLimit(ctx, kafka.ResourceTypeBroker, strconv.Itoa(md.Brokers[0].ID), "message.max.bytes")
	}
	limit := func(topic string) int {
		if n := m.configLimit(ctx, kafka.ResourceTypeTopic, topic, "max.message.bytes"); n > 0 && tp.exists[topic] {
			return n
		}
		if brokerLimit > 0 {
			return brokerLimit
		}
		return cfg.MaxMessageBytes
	}
	m.outLimit, m.dlqLimit = limit(cfg.OutputTopic), limit(cfg.DLQTopic)
	cfg.Log.Info().Str("output", cfg.OutputTopic).Int("output_max_bytes", m.outLimit).
		Str("dlq", cfg.DLQTopic).Int("dlq_max_bytes", m.dlqLimit).Msg("output topics checked")
}

// configLimit reads a size setting of a topic or broker; 0 when the
// broker will not say.
func (m *member) configLimit(ctx context.Context, typ kafka.ResourceType, name, key string) int {
	resp, err := m.client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
		{ResourceType: typ, ResourceName: name, ConfigNames: []string{key}},
	}})
	if err != nil {
		m.cfg.Log.Debug().Err(err).Str("resource", name).Msg("describe configs")
		return 0
	}
	for _, r := range resp.Resources {
		if r.Error != nil {
			continue
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName == key {
				if n, err := strconv.Atoi(e.ConfigValue); err == nil && n > 0 {
					return n
				}
			}
		}
	}
	return 0
}

// topicNames lists up to n topics of the cluster, for a message about a
// topic that is not there; nil when the brokers will not say.
func (m *member) topicNames(ctx context.Context, n int) []string {
	md, err := m.client.Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		return nil
	}
	var names []string
	for _, t := range md.Topics {
		if !t.Internal && !strings.HasPrefix(t.Name, "__") {
			names = append(names, t.Name)
		}
	}
	slices.Sort(names)
	return names[:min(n, len(names))]
}
