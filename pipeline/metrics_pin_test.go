package pipeline

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/streamlearner/streamlearner/internal/golden"
)

// describing is a Registerer that keeps the description of every
// collector registered with it, and registers it with a real registry.
type describing struct {
	*prometheus.Registry
	descs []string
}

func (d *describing) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		d.descs = append(d.descs, desc.String())
	}
	return d.Registry.Register(c)
}

func (d *describing) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := d.Register(c); err != nil {
			panic(err)
		}
	}
}

// TestNewMetricsPinned pins every series NewMetrics registers: its name,
// help text and labels, and what a fresh registry gathers (the series
// that start at 0, the buckets of the histograms), byte for byte.
func TestNewMetricsPinned(t *testing.T) {
	reg := &describing{Registry: prometheus.NewRegistry()}
	m := NewMetrics(reg)
	sort.Strings(reg.descs)
	var b strings.Builder
	fmt.Fprintf(&b, "%d collectors\n", len(reg.descs))
	for _, d := range reg.descs {
		fmt.Fprintln(&b, d)
	}
	// The histograms get a sample each, so that their buckets are listed.
	m.LabelDelay.Observe(1)
	m.CheckpointDuration.Observe(1)
	m.RestoreReplay.Observe(1)
	m.TransactionDuration.Observe(1)
	m.VisibleLatency.Observe(1)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		fmt.Fprintf(&b, "%s %s %q\n", f.GetName(), f.GetType(), f.GetHelp())
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				fmt.Fprintf(&b, "\t%s=%q", l.GetName(), l.GetValue())
			}
			for _, q := range s.GetHistogram().GetBucket() {
				fmt.Fprintf(&b, "\t%g", q.GetUpperBound())
			}
			fmt.Fprintln(&b)
		}
	}
	fmt.Fprintf(&b, "health: %t %v %t %t\n", m.health.gauge == m.Stuck, m.health.after,
		m.health.degraded.gauge == m.Degraded, m.health.halted.gauge == m.Unserved)
	if NewMetrics(nil) == nil {
		t.Fatal("no metrics without a registry")
	}
	path := filepath.Join("testdata", "metrics.golden")
	if golden.Updating() {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal([]byte(b.String()), want) {
		t.Errorf("metrics changed (go test -run %s -update rewrites them):\n%s\nwant:\n%s", t.Name(), b.String(), want)
	}
}
