package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/streamlearner/streamlearner/learners"
)

const (
	composeFile   = "../../docker-compose.yml"
	dashboardFile = "../../deploy/grafana/dashboards/streamlearner.json"
	memberConfig  = "../../deploy/streamlearner.json"
)

type dashboardPanel struct {
	Title      string `json:"title"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"` // a row's panels
}

// dashboardPanels reads the Grafana dashboard, rows flattened.
func dashboardPanels(t *testing.T) []dashboardPanel {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []dashboardPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var out []dashboardPanel
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// dashboardMetrics returns the streamlearner series the dashboard's
// queries name, as the text format prints them (a histogram's
// _bucket series, for example).
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	re := regexp.MustCompile(`streamlearner_[a-z0-9_]+`)
	var names []string
	for _, p := range dashboardPanels(t) {
		for _, tg := range p.Targets {
			names = append(names, re.FindAllString(tg.Expr, -1)...)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// TestDeployFiles checks what can be checked without a Docker engine: the
// dashboard queries the series the issue asks for through the provisioned
// data source, Prometheus scrapes both members, the members' config file
// is a valid run configuration whose topics init-topics creates, and the
// compose file validates (with docker-compose or docker compose, when
// installed; CI sets STREAMLEARNER_REQUIRE_COMPOSE=1 and installs it).
// TestProduceRunTail checks that /metrics serves every series the
// dashboard queries.
func TestDeployFiles(t *testing.T) {
	panels := dashboardPanels(t)
	for _, p := range panels {
		if len(p.Targets) > 0 && p.Datasource.UID != "prometheus" {
			t.Errorf("panel %q uses data source %q, not the provisioned one", p.Title, p.Datasource.UID)
		}
	}
	queried := dashboardMetrics(t)
	for _, want := range []string{
		"streamlearner_records_consumed_total",                    // throughput
		"streamlearner_windowed_mistake_ratio",                    // mistake rate
		"streamlearner_support_vectors",                           // support size
		"streamlearner_consumer_lag_records",                      // lag
		"streamlearner_checkpoint_last_success_timestamp_seconds", // checkpoint age
		"streamlearner_round_duration_seconds_bucket",             // round latency p99
		"streamlearner_dead_letters_total",                        // dead letters
		"streamlearner_checkpoint_saves_total",                    // checkpoint failures
		"streamlearner_checkpoint_duration_seconds_bucket",        // checkpoint duration
		"streamlearner_checkpoint_bytes",                          // snapshot size
	} {
		if !slices.Contains(queried, want) {
			t.Errorf("no dashboard panel queries %s", want)
		}
	}
	ds, err := os.ReadFile("../../deploy/grafana/provisioning/datasources/prometheus.yml")
	if err != nil || !strings.Contains(string(ds), "uid: prometheus") || !strings.Contains(string(ds), "url: http://prometheus:9090") {
		t.Errorf("provisioned data source: %v\n%s", err, ds)
	}
	// One unit per panel (so per axis), and rates in records, not the
	// "requests" of Grafana's reqps.
	dash, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var units struct {
		Panels []struct {
			Title       string `json:"title"`
			FieldConfig struct {
				Defaults struct {
					Unit string `json:"unit"`
				} `json:"defaults"`
				Overrides []struct {
					Properties []struct {
						ID string `json:"id"`
					} `json:"properties"`
				} `json:"overrides"`
			} `json:"fieldConfig"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(dash, &units); err != nil {
		t.Fatal(err)
	}
	for _, p := range units.Panels {
		if u := p.FieldConfig.Defaults.Unit; u == "" || u == "reqps" || u == "rps" {
			t.Errorf("panel %q: unit %q", p.Title, u)
		}
		for _, o := range p.FieldConfig.Overrides {
			for _, prop := range o.Properties {
				if prop.ID == "unit" {
					t.Errorf("panel %q overrides the unit of some series: two units on one axis", p.Title)
				}
			}
		}
	}
	prom, err := os.ReadFile("../../deploy/prometheus/prometheus.yml")
	if err != nil || !strings.Contains(string(prom), `["member-1:9464", "member-2:9464"]`) {
		t.Errorf("Prometheus does not scrape both members: %v\n%s", err, prom)
	}
	if !strings.Contains(string(prom), "rule_files:\n  - alerts.yml") {
		t.Errorf("Prometheus does not load alerts.yml:\n%s", prom)
	}

	// The members' config file parses as a run configuration whose learner
	// and kernel exist.
	c, err := parse(t, "run", "--config", memberConfig)
	if err != nil {
		t.Fatalf("%s: %v", memberConfig, err)
	}
	run := c.Run
	kern, err := learners.ParseKernel(run.Kernel)
	if err == nil {
		_, err = learners.New(run.Learner, kern, 0)
	}
	if err != nil {
		t.Errorf("%s: %v", memberConfig, err)
	}
	composeText, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	compose := string(composeText)
	if !strings.Contains(compose, "./deploy/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro") {
		t.Error("the compose file does not mount the alert rules beside prometheus.yml")
	}
	for _, topic := range []string{run.Topic, run.OutputTopic, run.DLQTopic, run.CheckpointTopic} {
		if !strings.Contains(compose, "create --topic "+topic+" ") {
			t.Errorf("init-topics does not create %q", topic)
		}
	}
	// The members' variables are ones run reads (a variable of another
	// command, or an old spelling, would be ignored without a word).
	runVars := map[string]bool{}
	tr, err := kong.Trace(cliModel(t), []string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range tr.Flags() {
		for _, e := range f.Envs {
			runVars[e] = true
		}
	}
	memberVars := regexp.MustCompile(`\n\s+(STREAMLEARNER_[A-Z_]+):`).FindAllStringSubmatch(compose, -1)
	if len(memberVars) == 0 {
		t.Error("the members set no STREAMLEARNER_* variables")
	}
	for _, m := range memberVars {
		if !runVars[m[1]] {
			t.Errorf("compose sets %s, which run does not read", m[1])
		}
	}
	// The producer's command line is one this binary accepts, writing to
	// the members' input topic.
	producer := regexp.MustCompile(`(?s)command: (\["gen".*?\])\n`).FindStringSubmatch(compose)
	var args []string
	if producer == nil || json.Unmarshal([]byte(producer[1]), &args) != nil {
		t.Fatal("no producer command in the compose file")
	}
	if _, err := parse(t, args...); err != nil {
		t.Errorf("producer %v: %v", args, err)
	}
	if i := slices.Index(args, "--topic"); i < 0 || args[i+1] != run.Topic {
		t.Errorf("the producer %v does not write to %q", args, run.Topic)
	}
	if !strings.Contains(compose, "create --topic "+run.CheckpointTopic+" --partitions 1 --config cleanup.policy=compact") {
		t.Errorf("checkpoint topic %q is not compacted", run.CheckpointTopic)
	}
	services := []string{"grafana", "init-topics", "kafka", "member-1", "member-2", "producer", "prometheus", "schema-registry"}
	for _, s := range services {
		if !strings.Contains(compose, "\n  "+s+":\n") {
			t.Errorf("compose file has no service %s", s)
		}
	}

	validator := composeValidator()
	if validator == nil {
		if os.Getenv("STREAMLEARNER_REQUIRE_COMPOSE") != "" {
			t.Fatal("STREAMLEARNER_REQUIRE_COMPOSE is set but neither docker-compose nor docker compose is installed")
		}
		t.Skip("compose file not validated: neither docker-compose nor docker compose is installed (apt-get install docker-compose)")
	}
	// config validates and resolves the file without a Docker engine.
	out, err := exec.Command(validator[0], append(validator[1:], "-f", composeFile, "config", "-q")...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v config -q: %v\n%s", validator, err, out)
	}
	out, err = exec.Command(validator[0], append(validator[1:], "-f", composeFile, "config", "--services")...).Output()
	if err != nil {
		t.Fatalf("%v config --services: %v", validator, err)
	}
	got := strings.Fields(string(out))
	slices.Sort(got)
	if !slices.Equal(got, services) {
		t.Errorf("compose services %v, want %v", got, services)
	}
}

// composeValidator returns the command that validates compose files:
// Debian's docker-compose, or the docker CLI's compose plugin.
func composeValidator() []string {
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return []string{"docker-compose"}
	}
	if _, err := exec.LookPath("docker"); err == nil && exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	return nil
}
