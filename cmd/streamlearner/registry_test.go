package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
)

// adultUnderscored writes the first n Adult events with '_' for '-' in
// their names (as Avro and protobuf names must be), so that one file is
// the JSON twin of the records produce encodes from it.
func adultUnderscored(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Open("../../testdata/adult.train.3000.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(zr)
	for i := 0; i < n && sc.Scan(); i++ {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			t.Fatal(err)
		}
		re := map[string]json.RawMessage{}
		for k, v := range obj {
			re[strings.ReplaceAll(k, "-", "_")] = v
		}
		b, _ := json.Marshal(re)
		out.Write(append(b, '\n'))
	}
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSchemaRegistryFormats writes the same 1500 Adult events as JSON,
// Avro and protobuf (produce --format, the development registry of
// broker --schema-registry-port) and, when python3 has confluent_kafka and
// avro, as Avro again by an independent encoder (librdkafka's Python
// client with the Apache Avro library). Replaying each topic must give
// the same report, number for number: the same features, margins and
// mistakes whatever the format; the independent encoder's topic too, and
// the independent decoder must read back our Avro as the JSON said.
func TestSchemaRegistryFormats(t *testing.T) {
	t.Parallel()
	bin := testBinary(t)
	dir := t.TempDir()
	port, rport := freePort(t), freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	regURL := fmt.Sprintf("http://127.0.0.1:%d", rport)
	p := start(t, filepath.Join(dir, "broker.log"), bin, "broker", "--port", strconv.Itoa(port), "--partitions", "4", "--schema-registry-port", strconv.Itoa(rport))
	defer p.kill()
	waitFor(t, "the registry", 10*time.Second, func() bool {
		r, err := http.Get(regURL + "/subjects")
		if err == nil {
			r.Body.Close()
		}
		return err == nil
	})
	data := filepath.Join(dir, "adult.jsonl")
	adultUnderscored(t, data, 1500)
	produce := func(topic string, extra ...string) {
		t.Helper()
		args := append([]string{"produce", "--brokers", addr, "--topic", topic, "--data", data, "--key", "id", "--auto-create"}, extra...)
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			t.Fatalf("produce %s: %v\n%s", topic, err, out)
		}
	}
	produce("json")
	produce("avro", "--format", "avro", "--schema", "../../testdata/schemas/adult.avsc", "--schema-registry", regURL)
	produce("pb", "--format", "protobuf", "--schema", "../../testdata/schemas/adult.proto", "--schema-registry", regURL)
	topics := []string{"json", "avro", "pb"}
	if pythonHas(t, "confluent_kafka.avro", "avro") {
		out, err := exec.Command(python(), "testdata/avro_interop.py", "produce", addr, regURL, "py-avro", data, "../../testdata/schemas/adult.avsc").CombinedOutput()
		if err != nil {
			t.Fatalf("python produce: %v\n%s", err, out)
		}
		topics = append(topics, "py-avro")
		// The independent decoder reads back what produce --format avro
		// wrote: every record equal to its JSON line.
		out, err = exec.Command(python(), "testdata/avro_interop.py", "check", addr, regURL, "avro", data).CombinedOutput()
		if err != nil {
			t.Fatalf("python check: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "1500 records equal") {
			t.Fatalf("python check: %s", out)
		}
	}
	var first string
	for _, topic := range topics {
		args := []string{"replay", "--brokers", addr, "--topic", topic, "--learner", "projectron++:max=100", "--kernel", "rbf:gamma=0.5",
			"--label-field", "income", "--key-field", "id", "--positive", ">50K", "--scale", "online", "--detector", "none"}
		if topic != "json" {
			args = append(args, "--schema-registry", regURL)
		}
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("replay %s: %v\n%s", topic, err, out)
		}
		if first == "" {
			first = string(out)
			if !strings.Contains(first, "projectron++") || strings.Count(first, "\n") < 5 {
				t.Fatalf("replay json: %s", out)
			}
			continue
		}
		if string(out) != first {
			t.Errorf("replay %s differs from the JSON topic's:\n%s\njson:\n%s", topic, out, first)
		}
	}
}

// TestSchemaRegistryOutageAndBadRecords runs the service on an Avro
// topic whose registry is a process of its own: killed mid-stream, the
// records written meanwhile (with a schema version the service has not
// fetched yet) wait, none dead-lettered, and are predicted once it is
// back; then each kind of bad record is a dead letter with its reason,
// and the partition goes on.
func TestSchemaRegistryOutageAndBadRecords(t *testing.T) {
	t.Parallel()
	bin := testBinary(t)
	dir := t.TempDir()
	port, rport, mport := freePort(t), freePort(t), freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	regURL := fmt.Sprintf("http://127.0.0.1:%d", rport)
	startBroker(t, bin, filepath.Join(dir, "broker.log"), port, filepath.Join(dir, "kafka"))
	// The registry alone: a second broker process, on a port nobody uses.
	startRegistry := func() *proc {
		p := start(t, filepath.Join(dir, "registry.log"), bin, "broker", "--port", strconv.Itoa(freePort(t)), "--data-dir", filepath.Join(dir, "reg"),
			"--schema-registry-port", strconv.Itoa(rport))
		waitFor(t, "the registry", 10*time.Second, func() bool {
			r, err := http.Get(regURL + "/subjects")
			if err == nil {
				r.Body.Close()
			}
			return err == nil
		})
		return p
	}
	reg := startRegistry()
	register := func(typ, text string) uint32 {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"schema": text, "schemaType": typ})
		r, err := http.Post(regURL+"/subjects/in-value/versions", "application/vnd.schemaregistry.v1+json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var got struct{ ID uint32 }
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &got); err != nil || got.ID == 0 {
			t.Fatalf("register: %d %s", r.StatusCode, b)
		}
		return got.ID
	}
	v1text := `{"type":"record","name":"C","fields":[{"name":"id","type":"string"},{"name":"a","type":"double"},{"name":"urgent","type":"boolean"},{"name":"label","type":"int"}]}`
	v2text := `{"type":"record","name":"C","fields":[{"name":"id","type":"string"},{"name":"a","type":"double"},{"name":"region","type":"string","default":"eu"},{"name":"label","type":"int"}]}`
	id1, id2 := register("AVRO", v1text), register("AVRO", v2text)
	pbID := register("PROTOBUF", `syntax = "proto3"; message M { string id = 1; }`)
	v1, err := codec.CompileSchema(id1, codec.SchemaAvro, v1text, nil)
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := codec.CompileSchema(id2, codec.SchemaAvro, v2text, nil)
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "in", Balancer: &kafka.Hash{}, AllowAutoTopicCreation: true, BatchTimeout: 10 * time.Millisecond}
	defer w.Close()
	write := func(s *codec.Schema, from, n int, region bool) {
		t.Helper()
		var msgs []kafka.Message
		for i := from; i < from+n; i++ {
			obj := map[string]any{"id": fmt.Sprintf("r%d", i), "a": json.Number(fmt.Sprint(float64(i%7) - 2.5)), "urgent": i%2 == 0,
				"region": []string{"eu", "us"}[i%2], "label": json.Number([]string{"1", "-1"}[(i/3)%2])}
			b, err := s.AppendEncoded(nil, obj)
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, kafka.Message{Key: []byte(obj["id"].(string)), Value: b})
		}
		if err := w.WriteMessages(context.Background(), msgs...); err != nil {
			t.Fatal(err)
		}
	}
	write(v1, 0, 200, false)
	run := start(t, filepath.Join(dir, "run.log"), bin, "run", "--brokers", addr, "--topic", "in", "--group", "g", "--output-topic", "out",
		"--learner", "rbp:budget=50", "--input", "avro", "--schema-registry", regURL, "--key-field", "id", "--auto-create",
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", mport), "--flush-interval", "50ms")
	defer run.kill()
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "run.log"))
			t.Logf("run.log:\n%s", b)
		}
	})
	count := func(topic string) int64 {
		var n int64
		for _, e := range topicEnds(t, addr, topic) {
			n += e
		}
		return n
	}
	waitFor(t, "200 predictions", 30*time.Second, func() bool { return count("out") >= 200 })
	reg.kill()
	write(v2, 200, 200, true) // version 2: not fetched yet, and the registry is down
	time.Sleep(3 * time.Second)
	if n := count("out"); n != 200 {
		t.Errorf("%d predictions while the registry is down; want 200 (the v2 records wait)", n)
	}
	if n := count("in.dlq"); n != 0 {
		t.Errorf("%d dead letters while the registry is down; want none", n)
	}
	metrics := func() string {
		r, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", mport))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return string(b)
	}
	if m := metrics(); !strings.Contains(m, "streamlearner_schema_registry_errors_total{partition=") || strings.Contains(m, "streamlearner_schema_registry_errors_total{partition=\"0\"} 0\n") && strings.Contains(m, "streamlearner_schema_registry_errors_total{partition=\"1\"} 0\n") && strings.Contains(m, "streamlearner_schema_registry_errors_total{partition=\"2\"} 0\n") && strings.Contains(m, "streamlearner_schema_registry_errors_total{partition=\"3\"} 0\n") {
		t.Errorf("no registry error counted during the outage")
	}
	reg = startRegistry()
	defer reg.kill()
	waitFor(t, "400 predictions after the registry came back", 30*time.Second, func() bool { return count("out") >= 400 })
	// Bad records: each a dead letter with its reason.
	good, _ := v1.AppendEncoded(nil, map[string]any{"id": "x", "a": json.Number("1"), "urgent": true, "label": json.Number("1")})
	bad := []kafka.Message{
		{Key: []byte("b1"), Value: []byte(`{"id":"plain json"}`)},                         // bad_framing
		{Key: []byte("b2"), Value: append(codec.AppendFrame(nil, 999), good[5:]...)},      // unknown_schema
		{Key: []byte("b3"), Value: good[:len(good)-2]},                                    // schema_mismatch (truncated)
		{Key: []byte("b4"), Value: append(codec.AppendFrame(nil, pbID), 0, 0x0a, 1, 'q')}, // schema_mismatch (protobuf for --input avro)
	}
	if err := w.WriteMessages(context.Background(), bad...); err != nil {
		t.Fatal(err)
	}
	write(v1, 400, 100, false) // and the partitions go on
	waitFor(t, "500 predictions and 4 dead letters", 30*time.Second, func() bool { return count("out") >= 500 && count("in.dlq") >= 4 })
	reasons := map[string]int{}
	readAll(t, addr, "in.dlq", func(m kafka.Message) {
		for _, h := range m.Headers {
			if h.Key == "streamlearner.error" {
				reasons[string(h.Value)]++
			}
		}
	})
	want := map[string]int{"bad_framing": 1, "unknown_schema": 1, "schema_mismatch": 2}
	if fmt.Sprint(reasons) != fmt.Sprint(want) {
		t.Errorf("dead-letter reasons %v, want %v", reasons, want)
	}
	if n := count("out"); n != 500 {
		t.Errorf("%d predictions, want 500", n)
	}
	run.stop(t, 20*time.Second)
}

func python() string {
	if p, err := exec.LookPath("/usr/bin/python3"); err == nil {
		return p
	}
	return "python3"
}

// pythonHas says whether python3 imports the modules; without them the
// interoperability part is skipped, unless STREAMLEARNER_REQUIRE_PYTHON is
// set (CI installs them).
func pythonHas(t *testing.T, modules ...string) bool {
	t.Helper()
	err := exec.Command(python(), "-c", "import "+strings.Join(modules, ", ")).Run()
	if err != nil && os.Getenv("STREAMLEARNER_REQUIRE_PYTHON") != "" {
		t.Fatalf("python3 cannot import %s (apt-get install python3-confluent-kafka python3-avro): %v", strings.Join(modules, ", "), err)
	}
	if err != nil {
		t.Logf("python3 cannot import %s: the independent encoder is skipped", strings.Join(modules, ", "))
	}
	return err == nil
}
