package kafkaconn

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	ok := []Config{
		{Brokers: []string{"127.0.0.1:9092"}},
		{Brokers: []string{"h:1"}, TLS: true, Mechanism: "scram-sha-512", Username: "u", Password: "p"},
		{Brokers: []string{"h:1"}, Mechanism: "plain", Username: "u"},
	}
	for _, c := range ok {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
		if _, err := c.Dialer(); err != nil {
			t.Errorf("%+v: dialer: %v", c, err)
		}
		if _, err := c.Transport(); err != nil {
			t.Errorf("%+v: transport: %v", c, err)
		}
	}
	bad := map[string]Config{
		"no broker":            {},
		"want host:port":       {Brokers: []string{"localhost"}},
		"both the certificate": {Brokers: []string{"h:1"}, TLS: true, CertFile: "c"},
		"without enabling TLS": {Brokers: []string{"h:1"}, CAFile: "ca"},
		"without a SASL":       {Brokers: []string{"h:1"}, Username: "u"},
		"needs a username":     {Brokers: []string{"h:1"}, Mechanism: "plain"},
		"want plain":           {Brokers: []string{"h:1"}, Mechanism: "gssapi", Username: "u"},
	}
	for want, c := range bad {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", c, err, want)
		}
	}
	c := Config{Brokers: []string{"h:1"}, TLS: true, CAFile: "/nonexistent/ca.pem"}
	if _, err := c.Dialer(); err == nil || !strings.Contains(err.Error(), "TLS CA") {
		t.Errorf("missing CA file: %v", err)
	}
}
