package fetch

import (
	"strings"
	"testing"
)

func TestParseBound(t *testing.T) {
	for _, ok := range []string{"", "earliest", "latest", "0", "17", "-5", "2026-01-02T15:04:05Z"} {
		if _, err := ParseBound(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"middle", "-x", "--5", "5s", "2026-01-02"} {
		if _, err := ParseBound(bad); err == nil || !strings.Contains(err.Error(), "-N (the last N records)") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
