package kafkaconn

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkatest"
	"github.com/twmb/franz-go/pkg/kfake"
)

// roundTrip writes a record with the transport and reads it back with the
// dialer, the two halves every command uses.
func roundTrip(t *testing.T, c Config) error {
	t.Helper()
	tr, err := c.Transport()
	if err != nil {
		return err
	}
	d, err := c.Dialer()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := &kafka.Writer{Addr: kafka.TCP(c.Brokers...), Topic: "t", Transport: tr, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, MaxAttempts: 1}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("hello")}); err != nil {
		return err
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.Brokers, Topic: "t", Partition: 0, Dialer: d, MaxWait: time.Second})
	defer kafkatest.CloseReader(t, r)
	m, err := r.ReadMessage(ctx)
	if err != nil {
		return err
	}
	if string(m.Value) != "hello" {
		t.Fatalf("read %q", m.Value)
	}
	return nil
}

func TestSASLAgainstABrokerThatRequiresIt(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "plainuser", "pw1"), kfake.Superuser("SCRAM-SHA-256", "scram256", "pw2"), kfake.Superuser("SCRAM-SHA-512", "scram512", "pw3"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	for _, ok := range []Config{
		{Brokers: brokers, Mechanism: "plain", Username: "plainuser", Password: "pw1"},
		{Brokers: brokers, Mechanism: "scram-sha-256", Username: "scram256", Password: "pw2"},
		{Brokers: brokers, Mechanism: "scram-sha-512", Username: "scram512", Password: "pw3"},
	} {
		if err := roundTrip(t, ok); err != nil {
			t.Errorf("%s: %v", ok.Mechanism, err)
		}
	}
	if err := roundTrip(t, Config{Brokers: brokers, Mechanism: "scram-sha-256", Username: "scram256", Password: "wrong"}); err == nil {
		t.Error("a wrong password was accepted")
	}
}

func TestTLSWithACustomCA(t *testing.T) {
	dir := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	if err := roundTrip(t, Config{Brokers: brokers, TLS: true, CAFile: ca}); err != nil {
		t.Errorf("TLS with the CA: %v", err)
	}
	if err := roundTrip(t, Config{Brokers: brokers, TLS: true}); err == nil {
		t.Error("an untrusted certificate was accepted")
	}
}

// Kafka keeps SCRAM credentials of the password's UTF-8 bytes: its
// clients and kafka-configs apply no SASLprep, which would turn this
// no-break space into a space and the proof into a wrong one.
func TestSCRAMSendsThePasswordAsKafkaStoresIt(t *testing.T) {
	const pass = "pass\u00a0word"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "u", pass))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(t, Config{Brokers: c.ListenAddrs(), Mechanism: "scram-sha-512", Username: "u", Password: pass}); err != nil {
		t.Error(err)
	}
}
