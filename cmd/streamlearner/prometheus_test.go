package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/internal/dev/embedded"
)

const alertsFile = "../../deploy/prometheus/alerts.yml"

// promClient queries a Prometheus server's HTTP API.
type promClient struct {
	t    *testing.T
	base string
}

func (c promClient) get(path string, q url.Values, into any) error {
	resp, err := http.Get(c.base + path + "?" + q.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s", path, env.Error)
	}
	return json.Unmarshal(env.Data, into)
}

// query evaluates expr at time at (zero: now) and returns its samples.
func (c promClient) query(expr string, at time.Time) ([]json.RawMessage, error) {
	q := url.Values{"query": {expr}}
	if !at.IsZero() {
		q.Set("time", strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 3, 64))
	}
	var d struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
	}
	if err := c.get("/api/v1/query", q, &d); err != nil {
		return nil, err
	}
	return d.Result, nil
}

type alertRule struct {
	Name   string `json:"name"`
	Query  string `json:"query"`
	Health string `json:"health"`
	Error  string `json:"lastError"`
}

func (c promClient) rules() ([]alertRule, error) {
	var d struct {
		Groups []struct {
			Rules []alertRule `json:"rules"`
		} `json:"groups"`
	}
	if err := c.get("/api/v1/rules", url.Values{"type": {"alert"}}, &d); err != nil {
		return nil, err
	}
	var out []alertRule
	for _, g := range d.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// comparison splits an alert expression "value > threshold" as Prometheus
// prints it.
var comparison = regexp.MustCompile(`^(?s)(.*\S)\s+(>|<|>=|<=|==|!=)\s+([0-9.e+-]+)$`)

// TestPrometheusEvaluates starts a real Prometheus (Debian's prometheus
// binary) on 127.0.0.1 scraping a running service with the shipped alert
// rules, then evaluates through the HTTP API every dashboard query and the
// value of every alert (each must parse and return data), checks that each
// rule evaluates without error, and stages two conditions to see their
// alerts' expressions go from false to true: dead letters, and an outage
// (the broker stops) that leaves the member's partitions unserved. Prometheus absent:
// skipped, unless STREAMLEARNER_REQUIRE_PROMETHEUS=1 (CI installs it).
func TestPrometheusEvaluates(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus and a service")
	}
	t.Parallel() // a process test that mostly waits: it overlaps the others (make test sets -parallel)
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("STREAMLEARNER_REQUIRE_PROMETHEUS") != "" {
			t.Fatal("STREAMLEARNER_REQUIRE_PROMETHEUS is set but there is no prometheus binary (apt-get install prometheus)")
		}
		t.Skip("no prometheus binary: dashboard queries and alert rules not evaluated (apt-get install prometheus)")
	}
	b, err := embedded.Start(embedded.Config{Partitions: 2, Topics: []string{"in", "out", "in.dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if out, err := execute(t, "produce", "--brokers", b.Addr(), "--topic", "in", "--data", "../../testdata/a9a.gz", "--limit", "2000"); err != nil {
		t.Fatalf("produce: %v %s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	ops := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	runCtx, stopRun := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := executeCtx(t, runCtx, "run", "--brokers", b.Addr(), "--topic", "in", "--group", "g", "--output-topic", "out",
			"--learner", "rbp:budget=50", "--kernel", "rbf:gamma=0.02", "--log-level", "error", "--flush-interval", "50ms",
			"--checkpoint-dir", t.TempDir(), "--checkpoint-every", "500", "--checkpoint-interval", "1s", "--metrics-addr", ops,
			"--delayed-labels",                       // labeled records learn at once; the pending series exist
			"--processing-guarantee", "exactly-once") // the transaction series exist
		done <- err
	}()
	defer func() {
		stopRun()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()

	dir := t.TempDir()
	rules, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.yml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [alerts.yml]\n"+
		"scrape_configs:\n  - job_name: streamlearner\n    static_configs:\n      - targets: [%q]\n", ops)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	web := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	prom := exec.CommandContext(ctx, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+web, "--log.level=warn")
	var promLog strings.Builder
	prom.Stdout, prom.Stderr = &promLog, &promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		prom.Process.Signal(os.Interrupt)
		prom.Wait()
		if t.Failed() {
			t.Logf("prometheus:\n%s", promLog.String())
		}
	}()
	c := promClient{t: t, base: "http://" + web}
	wait := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// All records read, with a few scrapes since.
	wait("the service to read every record", func() bool {
		r, err := c.query(`sum(streamlearner_records_consumed_total) >= 2000`, time.Time{})
		return err == nil && len(r) == 1
	})
	time.Sleep(3 * time.Second)

	for _, p := range dashboardPanels(t) {
		for _, tg := range p.Targets {
			r, err := c.query(tg.Expr, time.Time{})
			if err != nil || len(r) == 0 {
				t.Errorf("panel %q: %s: %v, %d series", p.Title, tg.Expr, err, len(r))
			}
		}
	}

	var loaded []alertRule
	wait("the alert rules to be evaluated", func() bool {
		loaded, err = c.rules()
		if err != nil {
			return false
		}
		for _, r := range loaded {
			if r.Health != "ok" && r.Error == "" {
				return false // not evaluated yet
			}
		}
		return len(loaded) > 0
	})
	if len(loaded) != strings.Count(string(rules), "- alert: ") {
		t.Errorf("Prometheus loaded %d of the alert rules", len(loaded))
	}
	var deadLetters string
	for _, r := range loaded {
		if r.Health != "ok" {
			t.Errorf("alert %s: health %s: %s", r.Name, r.Health, r.Error)
		}
		m := comparison.FindStringSubmatch(r.Query)
		if m == nil {
			t.Errorf("alert %s: %q is not \"value comparison threshold\"", r.Name, r.Query)
			continue
		}
		if res, err := c.query(m[1], time.Time{}); err != nil || len(res) == 0 {
			t.Errorf("alert %s: value %s: %v, %d series", r.Name, m[1], err, len(res))
		}
		if r.Name == "StreamlearnerDeadLetters" {
			deadLetters = r.Query
		}
	}
	if deadLetters == "" {
		t.Fatal("no StreamlearnerDeadLetters rule")
	}

	// Stage dead letters: 300 undecodable records beside 2000 good ones
	// is well over 1 %. The rule's 5-minute windows become 5 seconds, as
	// the test cannot wait minutes; the `for` duration is not evaluated.
	scaled := regexp.MustCompile(`\[(\d+)m\]`).ReplaceAllString(deadLetters, "[${1}s]")
	before := time.Now()
	if r, err := c.query(scaled, before); err != nil || len(r) != 0 {
		t.Fatalf("%s before any bad record: %v %d series", scaled, err, len(r))
	}
	bad := make([]kafka.Message, 300)
	for i := range bad {
		bad[i] = kafka.Message{Value: []byte("{not json")}
	}
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: "in", BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
	if err := w.WriteMessages(ctx, bad...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	wait("the dead letters to be scraped", func() bool {
		r, err := c.query(`sum(streamlearner_dead_letters_total{reason="invalid_json"}) >= 300`, time.Time{})
		return err == nil && len(r) == 1
	})
	time.Sleep(2 * time.Second)
	if r, err := c.query(scaled, time.Time{}); err != nil || len(r) == 0 {
		t.Errorf("%s after 300 bad records: %v, %d series: the alert would not fire", scaled, err, len(r))
	}

	// Stage an outage: with the broker gone the member's generation ends,
	// its workers stop, and it still holds the partitions it cannot serve.
	notServed := ruleQuery(t, loaded, "StreamlearnerPartitionsNotServed")
	if r, err := c.query(notServed, time.Time{}); err != nil || len(r) != 0 {
		t.Fatalf("%s while serving: %v, %d series", notServed, err, len(r))
	}
	b.Close()
	wait("the outage to show", func() bool {
		r, err := c.query(notServed, time.Time{})
		return err == nil && len(r) > 0
	})
}

func ruleQuery(t *testing.T, rules []alertRule, name string) string {
	t.Helper()
	for _, r := range rules {
		if r.Name == name {
			return r.Query
		}
	}
	t.Fatalf("no alert rule %s", name)
	return ""
}
