package kafkaconn

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestProbeNamesTheCause: a broker that cannot be talked to is named
// with its cause, at the first attempt: credentials refused, a TLS
// handshake that fails, a listener that closes on a client speaking
// neither TLS nor SASL, nothing listening. Authentication and TLS are
// final; the others may pass. Before, all of them were "brokers do not
// answer yet", retried until the connect timeout.
func TestProbeNamesTheCause(t *testing.T) {
	sasl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "u", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer sasl.Close()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	tlsc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}))
	if err != nil {
		t.Fatal(err)
	}
	defer tlsc.Close()
	plain, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	nobody := l.Addr().String()
	l.Close()

	for _, c := range []struct {
		name string
		cfg  Config
		want Cause
		ok   bool
	}{
		{"right password", Config{Brokers: sasl.ListenAddrs(), Mechanism: "scram-sha-256", Username: "u", Password: "pw"}, 0, true},
		{"wrong password", Config{Brokers: sasl.ListenAddrs(), Mechanism: "scram-sha-256", Username: "u", Password: "wrong"}, CauseAuth, false},
		{"no SASL", Config{Brokers: sasl.ListenAddrs()}, CauseClosed, false},
		{"untrusted certificate", Config{Brokers: tlsc.ListenAddrs(), TLS: true}, CauseTLS, false},
		{"no TLS", Config{Brokers: tlsc.ListenAddrs()}, CauseClosed, false},
		{"TLS to plain text", Config{Brokers: plain.ListenAddrs(), TLS: true}, CauseTLS, false},
		{"nothing listens", Config{Brokers: []string{nobody}}, CauseUnreachable, false},
		{"plain text", Config{Brokers: plain.ListenAddrs()}, 0, true},
	} {
		c.cfg.DialTimeout = time.Second
		t0 := time.Now()
		err := c.cfg.Probe(context.Background())
		var ce *ConnError
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case !c.ok && (!errors.As(err, &ce) || ce.Cause != c.want):
			t.Errorf("%s: %v (%#v), want cause %d", c.name, err, ce, c.want)
		case !c.ok && ce.Final() != (c.want == CauseAuth || c.want == CauseTLS):
			t.Errorf("%s: final %v", c.name, ce.Final())
		}
		if took := time.Since(t0); took > 2*time.Second {
			t.Errorf("%s: probed in %v", c.name, took)
		}
		if err != nil {
			t.Logf("%s: %v", c.name, err)
		}
	}
}
