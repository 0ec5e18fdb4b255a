package kafkaconn

import (
	"context"

	"github.com/segmentio/kafka-go/sasl"
	fsasl "github.com/twmb/franz-go/pkg/sasl"
)

// scramMechanism runs franz-go's SCRAM client (the module is linked for
// the embedded broker anyway) through kafka-go's SASL interface. kafka-go's
// own SCRAM links xdg-go/scram, whose stringprep tables cost every command
// 0.2 ms of start-up. It also sends the credentials as their UTF-8 bytes,
// with no SASLprep, as Kafka's Java client does and as kafka-configs
// stores them.
type scramMechanism struct{ m fsasl.Mechanism }

func (s scramMechanism) Name() string { return s.m.Name() }

func (s scramMechanism) Start(ctx context.Context) (sasl.StateMachine, []byte, error) {
	sess, first, err := s.m.Authenticate(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	return scramSession{sess}, first, nil
}

type scramSession struct{ s fsasl.Session }

// Next needs no ctx: a SCRAM step only computes. SCRAM's last step checks
// the server's signature and returns done with no message, so kafka-go,
// which sends nothing once done, loses nothing.
func (s scramSession) Next(_ context.Context, challenge []byte) (bool, []byte, error) {
	return s.s.Challenge(challenge)
}
