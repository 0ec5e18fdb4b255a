package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

// prepare checks, before the member joins its group, what would otherwise
// fail later and quietly: that the brokers answer (within
// Config.ConnectTimeout), that the output and dead-letter topics exist
// (unless they may be created), and how large a record each of them takes.
func (m *member) prepare(ctx context.Context) error {
	cfg := m.cfg
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	var (
		md  *kafka.MetadataResponse
		err error
	)
	for {
		md, err = m.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{cfg.Topic, cfg.OutputTopic, cfg.DLQTopic}})
		if err == nil || ctx.Err() != nil {
			break
		}
		cfg.Log.Warn().Err(err).Strs("brokers", cfg.Conn.Brokers).Msg("brokers do not answer yet; retrying")
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("brokers %v did not answer within %v (--connect-timeout): %w", cfg.Conn.Brokers, cfg.ConnectTimeout, err)
		}
		return fmt.Errorf("reach brokers %v: %w", cfg.Conn.Brokers, err)
	}
	exists := map[string]bool{}
	for _, t := range md.Topics {
		exists[t.Name] = t.Error == nil && len(t.Partitions) > 0
	}
	for _, t := range []struct{ name, role, flag string }{
		{cfg.OutputTopic, "output", "--output-topic"}, {cfg.DLQTopic, "dead-letter", "--dlq-topic"},
	} {
		if !exists[t.name] && !cfg.AutoCreateTopics {
			return fmt.Errorf("%s topic %q does not exist: create it, fix %s, or pass --auto-create", t.role, t.name, t.flag)
		}
	}
	brokerLimit := 0
	if len(md.Brokers) > 0 {
		brokerLimit = m.configLimit(ctx, kafka.ResourceTypeBroker, strconv.Itoa(md.Brokers[0].ID), "message.max.bytes")
	}
	limit := func(topic string) int {
		if n := m.configLimit(ctx, kafka.ResourceTypeTopic, topic, "max.message.bytes"); n > 0 && exists[topic] {
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
	return nil
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
