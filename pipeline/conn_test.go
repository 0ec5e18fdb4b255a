package pipeline

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// A start that cannot pass the brokers' door fails at once, naming why:
// a wrong password says the authentication was refused, a client
// without SASL says the broker closed the connection (after a few tries:
// a broker starting up may do it too). Before, both were "brokers do not
// answer yet ... unexpected EOF" until --connect-timeout.
func TestStartNamesWhyBrokersRefuse(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out", "in.dlq"), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "u", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		name, mech, pass, says string
		within                 time.Duration
	}{
		{"wrong password", "scram-sha-256", "wrong", "refused the authentication", 5 * time.Second},
		{"no SASL", "", "", "closed the connection", 10 * time.Second},
	} {
		cfg := testConfigAt(t, c.ListenAddrs()[0], "perceptron")
		cfg.Conn.Mechanism, cfg.Conn.Username, cfg.Conn.Password = tc.mech, "u", tc.pass
		if tc.mech == "" {
			cfg.Conn.Username = ""
		}
		cfg.ConnectTimeout = time.Minute
		t0 := time.Now()
		err := Run(context.Background(), cfg)
		if took := time.Since(t0); err == nil || !strings.Contains(err.Error(), tc.says) || took > tc.within {
			t.Errorf("%s: %v after %v; want %q within %v", tc.name, err, took, tc.says, tc.within)
		}
	}
}
