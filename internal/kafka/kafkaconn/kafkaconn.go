// Package kafkaconn turns the connection options users need with real
// clusters — brokers, client id, TLS, SASL — into the kafka-go dialer
// (readers, consumer groups) and transport (writers, admin requests) that
// every Kafka-facing command shares.
package kafkaconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Config holds connection options. The zero value (plus Brokers) connects
// in plain text without authentication.
type Config struct {
	Brokers  []string // bootstrap host:port list; required
	ClientID string   // default "streamlearner"

	// TLS: set TLS to encrypt. CAFile adds a CA bundle (PEM) to trust
	// (default: the system's); CertFile and KeyFile, given together,
	// authenticate the client. InsecureSkipVerify is for tests only: it
	// accepts any server certificate.
	TLS                bool
	CAFile             string
	CertFile, KeyFile  string
	InsecureSkipVerify bool

	// SASL: Mechanism is "" (none), "plain", "scram-sha-256" or
	// "scram-sha-512". PLAIN sends the password in clear: use it with TLS.
	Mechanism          string
	Username, Password string

	// DialTimeout bounds connection setup; default 10 s.
	DialTimeout time.Duration
}

// Validate checks the options without connecting.
func (c *Config) Validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("no broker address given")
	}
	for _, b := range c.Brokers {
		if !strings.Contains(b, ":") {
			return fmt.Errorf("broker %q: want host:port", b)
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return errors.New("a TLS client certificate needs both the certificate and the key file")
	}
	if !c.TLS && (c.CAFile != "" || c.CertFile != "" || c.InsecureSkipVerify) {
		return errors.New("TLS files or options given without enabling TLS")
	}
	switch c.Mechanism {
	case "":
		if c.Username != "" || c.Password != "" {
			return errors.New("SASL credentials given without a SASL mechanism")
		}
	case "plain", "scram-sha-256", "scram-sha-512":
		if c.Username == "" {
			return fmt.Errorf("SASL %s needs a username", c.Mechanism)
		}
	default:
		return fmt.Errorf("SASL mechanism %q: want plain, scram-sha-256 or scram-sha-512", c.Mechanism)
	}
	return nil
}

func (c *Config) clientID() string {
	if c.ClientID == "" {
		return "streamlearner"
	}
	return c.ClientID
}

// TLSConfig is the TLS configuration the flags describe (nil without
// TLS), for the other services the commands reach (a schema registry).
func (c *Config) TLSConfig() (*tls.Config, error) { return c.tlsConfig() }

func (c *Config) tlsConfig() (*tls.Config, error) {
	if !c.TLS {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.InsecureSkipVerify} //nolint:gosec // opt-in, for tests
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("TLS CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS CA %s: no PEM certificate found", c.CAFile)
		}
		t.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("TLS client certificate: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

func (c *Config) mechanism() (sasl.Mechanism, error) {
	switch c.Mechanism {
	case "plain":
		return plain.Mechanism{Username: c.Username, Password: c.Password}, nil
	case "scram-sha-256":
		return scramMechanism{scram.Auth{User: c.Username, Pass: c.Password}.AsSha256Mechanism()}, nil
	case "scram-sha-512":
		return scramMechanism{scram.Auth{User: c.Username, Pass: c.Password}.AsSha512Mechanism()}, nil
	}
	return nil, nil
}

// security returns what both the dialer and the transport need.
func (c *Config) security() (*tls.Config, sasl.Mechanism, time.Duration, error) {
	t, err := c.tlsConfig()
	if err != nil {
		return nil, nil, 0, err
	}
	m, err := c.mechanism()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("SASL: %w", err)
	}
	timeout := c.DialTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return t, m, timeout, nil
}

// Dialer returns the dialer for readers and consumer groups.
func (c *Config) Dialer() (*kafka.Dialer, error) {
	t, m, timeout, err := c.security()
	if err != nil {
		return nil, err
	}
	return &kafka.Dialer{ClientID: c.clientID(), Timeout: timeout, DualStack: true, TLS: t, SASLMechanism: m}, nil
}

// Transport returns the transport for writers and admin clients.
func (c *Config) Transport() (*kafka.Transport, error) {
	t, m, timeout, err := c.security()
	if err != nil {
		return nil, err
	}
	return &kafka.Transport{ClientID: c.clientID(), DialTimeout: timeout, TLS: t, SASL: m}, nil
}
