package fetch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/segmentio/kafka-go/protocol"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// exchange is one Fetch request that this package writes and whose answer
// it reads itself, through a kafka.Transport: the transport routes it to
// the partitions' leader on a connection it has set up (TLS, SASL,
// version negotiation), then hands the connection over (kafka-go's
// RawExchanger), so the answer never goes through kafka-go's decoder.
//
// That decoder copies every record batch of an answer into pages of 64
// KiB from a pool, however small the batch, until its records are closed.
// An answer for hundreds of partitions of small batches cost tens of times
// its size, so a memory budget had to ask for a few records a partition
// at a time. Here an answer is read into one buffer of its own size, its
// structure by kmsg (franz-go's generated protocol code) and its record
// batches by batches.go.
type exchange struct {
	req      kmsg.FetchRequest
	clientID string
	// buf holds the answer; reused between a caller's requests.
	buf *[]byte
	// version is the Fetch version the connection negotiated, capped at
	// maxFetchVersion.
	version int16
	res     kmsg.FetchResponse
	err     error
}

// The Fetch versions read here. From v4 a broker serves read-committed
// data with the aborted transactions' list (Kafka 0.11); up to v11 the
// encoding is not "flexible" and topics go by name, which is what
// kafka-go negotiates (its own Fetch stops at v11).
const (
	minFetchVersion = 4
	maxFetchVersion = 11
)

// maxAnswer bounds the size an answer may say it has. A request asks for
// far less, but a broker returns the first batch of a partition whole
// whatever the limits, and a topic's max.message.bytes may be large; past
// this the length is taken as corrupt rather than allocated.
const maxAnswer = 1 << 30

// newExchange is a Fetch request that waits up to wait for at least a
// byte, reading committed data unless uncommitted; its answer goes in
// *buf.
func newExchange(clientID string, buf *[]byte, wait time.Duration, uncommitted bool) *exchange {
	x := &exchange{clientID: clientID, buf: buf}
	x.req.Default()
	x.req.MaxWaitMillis = int32(wait.Milliseconds())
	x.req.MinBytes = 1
	x.req.IsolationLevel = isolation(uncommitted)
	return x
}

func (x *exchange) ApiKey() protocol.ApiKey { return protocol.Fetch }

// Broker routes the request to the leader of its partitions, as kafka-go's
// own Fetch request does (with its errors, which leaderMoved recognizes).
func (x *exchange) Broker(cluster protocol.Cluster) (protocol.Broker, error) {
	broker := protocol.Broker{ID: -1}
	for _, t := range x.req.Topics {
		topic, ok := cluster.Topics[t.Topic]
		if !ok {
			return broker, fetchapi.NewError(protocol.NewErrNoTopic(t.Topic))
		}
		for _, p := range t.Partitions {
			part, ok := topic.Partitions[p.Partition]
			if !ok {
				return broker, fetchapi.NewError(protocol.NewErrNoPartition(t.Topic, p.Partition))
			}
			b, ok := cluster.Brokers[part.Leader]
			switch {
			case !ok:
				return broker, fetchapi.NewError(protocol.NewErrNoLeader(t.Topic, p.Partition))
			case broker.ID < 0:
				broker = b
			case b.ID != broker.ID:
				return broker, fetchapi.NewError(fmt.Errorf("mismatching leaders (%d!=%d)", b.ID, broker.ID))
			}
		}
	}
	return broker, nil
}

// Required is called by the connection with the versions it negotiated,
// just before RawExchange.
func (x *exchange) Required(versions map[protocol.ApiKey]int16) bool {
	x.version = min(versions[protocol.Fetch], maxFetchVersion)
	return true
}

// RawExchange writes the request and reads its answer from the
// connection. An error leaves the connection to be closed by the
// transport: a half-read answer cannot be resynchronized.
func (x *exchange) RawExchange(rw io.ReadWriter) (protocol.Message, error) {
	if x.version < minFetchVersion {
		return nil, fmt.Errorf("the broker serves Fetch only up to v%d; reading needs v%d (Kafka 0.11) or later", x.version, minFetchVersion)
	}
	x.req.Version = x.version
	const correlationID = 1 // one request at a time on the connection
	buf := *x.buf
	buf = kmsg.NewRequestFormatter(kmsg.FormatterClientID(x.clientID)).AppendRequest(buf[:0], &x.req, correlationID)
	if _, err := rw.Write(buf); err != nil {
		return nil, fmt.Errorf("send fetch request: %w", err)
	}
	var size [4]byte
	if _, err := io.ReadFull(rw, size[:]); err != nil {
		return nil, fmt.Errorf("read fetch answer: %w", err)
	}
	n := int(int32(binary.BigEndian.Uint32(size[:])))
	if n < 4 || n > maxAnswer {
		return nil, fmt.Errorf("read fetch answer: its length %d is not that of an answer", n)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	*x.buf = buf
	if _, err := io.ReadFull(rw, buf); err != nil {
		return nil, fmt.Errorf("read fetch answer: %w", err)
	}
	if id := int32(binary.BigEndian.Uint32(buf)); id != correlationID {
		return nil, fmt.Errorf("read fetch answer: correlation id %d, not %d", id, correlationID)
	}
	x.res.Default()
	x.res.Version = x.version
	// Record batches stay slices of buf (kmsg does not copy bytes): they
	// are read before the next request reuses it.
	if err := x.res.ReadFrom(buf[4:]); err != nil {
		// The whole answer was read: the connection is still in step.
		x.err = fmt.Errorf("decode fetch answer (v%d, %d bytes): %w", x.version, n, err)
	}
	return x, nil
}

// answer returns the decoded answer to x, or why there is none.
func answerOf(m protocol.Message, err error) (*kmsg.FetchResponse, error) {
	if err != nil {
		return nil, err
	}
	x, ok := m.(*exchange)
	if !ok {
		return nil, errors.New("malformed response")
	}
	if x.err != nil {
		return nil, x.err
	}
	return &x.res, nil
}
