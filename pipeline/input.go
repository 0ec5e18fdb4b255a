package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

// inputPoll is how often a member whose input topic does not exist looks
// for it again.
const inputPoll = 2 * time.Second

// awaitInput waits until the input topic exists and returns its
// partition count; 0 and no error when ctx ends first. The member must
// not join its group before: kafka-go's group asks the brokers to create
// the topics it subscribes to, so on brokers that allow it
// (auto.create.topics.enable, the embedded one) a --topic with a typo
// became an empty topic, served and ready for ever. --auto-create makes
// outputs only. Meanwhile the log says so once, and /readyz says why
// (Metrics.Waiting).
func (m *member) awaitInput(ctx context.Context) (int, error) {
	cfg := m.cfg
	defer cfg.Metrics.wait("")
	said := false
	for {
		md, err := m.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{cfg.Topic}})
		if ctx.Err() != nil {
			return 0, nil
		}
		if err == nil {
			for _, t := range md.Topics {
				switch {
				case t.Name != cfg.Topic:
				case t.Error == nil && len(t.Partitions) > 0:
					if said {
						cfg.Log.Info().Str("topic", cfg.Topic).Int("partitions", len(t.Partitions)).Msg("the input topic exists now; joining the group")
					}
					return len(t.Partitions), nil
				case t.Error != nil && !errors.Is(t.Error, kafka.UnknownTopicOrPartition) && !errors.Is(t.Error, kafka.LeaderNotAvailable):
					return 0, fmt.Errorf("input topic %q: %w", cfg.Topic, t.Error)
				}
			}
		}
		if !said {
			// A typo in --topic looks exactly like a quiet stream.
			cfg.Log.Error().Str("topic", cfg.Topic).Strs("existing_topics", m.topicNames(ctx, 20)).
				Msg("the INPUT topic does not exist: the member waits for it, not ready, and does not create it (--auto-create makes outputs only); check --topic for a typo")
			cfg.Metrics.wait(fmt.Sprintf("input topic %q does not exist: waiting for it, check --topic for a typo", cfg.Topic))
			said = true
		}
		select {
		case <-ctx.Done():
			return 0, nil
		case <-time.After(inputPoll):
		}
	}
}

// Waiting says why the member has not joined its group, for /readyz:
// its input topic does not exist. Empty once it joins, or when it never
// had to wait.
func (m *Metrics) Waiting() string {
	if why := m.waiting.Load(); why != nil {
		return *why
	}
	return ""
}

// wait records why the member waits before joining ("": it no longer
// does).
func (m *Metrics) wait(why string) {
	if why == "" {
		m.waiting.Store(nil)
		return
	}
	m.waiting.Store(&why)
}
