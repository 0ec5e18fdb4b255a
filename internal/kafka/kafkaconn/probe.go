package kafkaconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	kafka "github.com/segmentio/kafka-go"
)

// Cause is why a broker could not be talked to.
type Cause uint8

// The causes Probe tells apart.
const (
	// CauseUnreachable: no connection (refused, no route, a name that
	// does not resolve, a timeout): a broker down or starting.
	CauseUnreachable Cause = iota
	// CauseAuth: the broker refused the SASL credentials or mechanism.
	CauseAuth
	// CauseTLS: the TLS handshake failed (a certificate not trusted, a
	// port that does not speak TLS).
	CauseTLS
	// CauseClosed: the broker accepted the connection, then closed it at
	// the first request: what a TLS or SASL listener does to a client
	// that speaks neither.
	CauseClosed
)

// ConnError is a broker that could not be talked to, and why.
type ConnError struct {
	Broker string
	Cause  Cause
	Err    error
	hint   string
}

func (e *ConnError) Error() string {
	what := map[Cause]string{
		CauseUnreachable: "cannot be reached",
		CauseAuth:        "refused the authentication (SASL)",
		CauseTLS:         "failed the TLS handshake",
		CauseClosed:      "closed the connection at the first request",
	}[e.Cause]
	s := fmt.Sprintf("broker %s %s: %v", e.Broker, what, e.Err)
	if e.hint != "" {
		s += " (" + e.hint + ")"
	}
	return s
}

func (e *ConnError) Unwrap() error { return e.Err }

// Final says whether waiting cannot help: credentials, a mechanism or a
// certificate the broker refuses are refused again.
func (e *ConnError) Final() bool { return e.Cause == CauseAuth || e.Cause == CauseTLS }

// Probe connects to each broker as the readers do (TLS, SASL) and asks
// it for its metadata, to say why brokers do not answer: it returns nil
// when one answers, else the most telling *ConnError (an authentication
// or TLS failure before a closed connection before an unreachable
// broker). Each attempt is bounded by the dial timeout.
func (c *Config) Probe(ctx context.Context) error {
	d, err := c.Dialer()
	if err != nil {
		return err
	}
	var worst *ConnError
	for _, b := range c.Brokers {
		st, err := probe(ctx, d, b)
		if err == nil {
			return nil
		}
		ce := c.classify(b, err, st)
		if worst == nil || rank(ce.Cause) > rank(worst.Cause) {
			worst = ce
		}
	}
	return worst
}

// How far a probe went.
const (
	probeNone      = iota
	probeReached   // a TCP connection was made
	probeConnected // and TLS and SASL went through
)

// probe says how far it went, and the error that stopped it.
func probe(ctx context.Context, d *kafka.Dialer, broker string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	// A bare connection first: what fails after it is the broker's answer
	// to TLS, SASL or a request, not the network.
	raw, err := (&net.Dialer{}).DialContext(ctx, "tcp", broker)
	if err != nil {
		return probeNone, err
	}
	raw.Close()
	conn, err := d.DialContext(ctx, "tcp", broker)
	if err != nil {
		return probeReached, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	_, err = conn.Brokers() // a metadata request: what a SASL listener refuses unauthenticated
	return probeConnected, err
}

func rank(c Cause) int {
	return map[Cause]int{CauseUnreachable: 0, CauseClosed: 1, CauseTLS: 2, CauseAuth: 3}[c]
}

// classify names the cause of err, met talking to broker at stage st of
// probe.
func (c *Config) classify(broker string, err error, st int) *ConnError {
	ce := &ConnError{Broker: broker, Cause: CauseUnreachable, Err: err}
	var (
		kerr    kafka.Error
		rec     tls.RecordHeaderError
		alert   tls.AlertError
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &kerr) && (kerr == kafka.SASLAuthenticationFailed || kerr == kafka.UnsupportedSASLMechanism || kerr == kafka.IllegalSASLState):
		ce.Cause = CauseAuth
	case errors.As(err, &rec) || errors.As(err, &alert) || errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid):
		ce.Cause = CauseTLS
	case st == probeNone:
		// No connection at all.
	case c.TLS && st == probeReached && !errors.As(err, &kerr):
		// The handshake got no answer, or the connection closed on it: a
		// port that does not speak TLS reads a ClientHello as a request.
		ce.Cause = CauseTLS
		ce.hint = "does this port speak TLS? without --tls the client speaks plain text"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		ce.Cause = CauseClosed
	}
	if ce.Cause == CauseClosed {
		switch {
		case c.Mechanism == "":
			ce.hint = "a listener that wants TLS (--tls) or SASL (--sasl-mechanism) closes so on a client that speaks neither"
		default:
			ce.hint = "a listener that wants TLS (--tls) closes so on a client that speaks plain text"
		}
	}
	return ce
}
