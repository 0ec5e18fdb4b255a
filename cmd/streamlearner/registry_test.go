package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
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

	"github.com/hamba/avro/v2/ocf"
	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkatest"
	"github.com/streamlearner/streamlearner/internal/offline"
	"github.com/streamlearner/streamlearner/internal/replay"
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

// brokerWithRegistry starts the development broker with partitions per
// topic and its schema registry, and returns their addresses once the
// registry answers; the broker is killed when the test ends.
func brokerWithRegistry(t *testing.T, bin, dir string, partitions int) (addr, regURL string) {
	t.Helper()
	rport := freePort(t)
	regURL = fmt.Sprintf("http://127.0.0.1:%d", rport)
	var port int
	p := startWithRegistry(t, filepath.Join(dir, "broker.log"), regURL, func() []string {
		port = freePort(t)
		return []string{bin, "broker", "--port", strconv.Itoa(port), "--partitions", strconv.Itoa(partitions), "--schema-registry-port", strconv.Itoa(rport)}
	})
	t.Cleanup(p.kill)
	return fmt.Sprintf("127.0.0.1:%d", port), regURL
}

// startWithRegistry starts the process args gives (its binary first) and
// waits until the registry at regURL answers. A process that exits
// first — a port another test took between freePort and the bind — is
// started again with args drawn afresh, up to three times, and then
// fails with its log, rather than after the wait's bound.
func startWithRegistry(t *testing.T, logPath, regURL string, args func() []string) *proc {
	t.Helper()
	for try := 1; ; try++ {
		a := args()
		p := start(t, logPath, a[0], a[1:]...)
		if waitForRegistry(t, regURL, p) {
			return p
		}
		b, _ := os.ReadFile(logPath)
		if try == 3 {
			t.Fatalf("the registry's process exited before it answered, %d times; its log:\n%s", try, b)
		}
		t.Logf("the registry's process exited before it answered (try %d); its log:\n%s", try, b)
	}
}

// waitForRegistry waits until the registry at regURL answers (true) or
// its process p exits (false).
func waitForRegistry(t *testing.T, regURL string, p *proc) bool {
	t.Helper()
	exited := false
	// A bound against a hang, not a timing target: a broker starting while
	// the package's other process tests load both cores once took over 10 s.
	waitFor(t, "the registry", time.Minute, func() bool {
		select {
		case <-p.ended:
			exited = true
			return true
		default:
		}
		r, err := http.Get(regURL + "/subjects")
		if err == nil {
			r.Body.Close()
		}
		return err == nil
	})
	return !exited
}

// TestSchemaRegistryFormats writes the same 1500 Adult events as JSON,
// Avro and protobuf (produce --format, the development registry of
// broker --schema-registry-port) and, when python3 has confluent_kafka (with
// requests) and avro, as Avro again by an independent encoder (librdkafka's Python
// client with the Apache Avro library). Replaying each topic must give
// the same report, number for number: the same features, margins and
// mistakes whatever the format; the independent encoder's topic too, and
// the independent decoder must read back our Avro as the JSON said.
func TestSchemaRegistryFormats(t *testing.T) {
	t.Parallel()
	bin := testBinary(t)
	dir := t.TempDir()
	addr, regURL := brokerWithRegistry(t, bin, dir, 4)
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
	if pythonCan(t, "produce", "check") {
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
		return startWithRegistry(t, filepath.Join(dir, "registry.log"), regURL, func() []string {
			return []string{bin, "broker", "--port", strconv.Itoa(freePort(t)), "--data-dir", filepath.Join(dir, "reg"), "--schema-registry-port", strconv.Itoa(rport)}
		})
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

// pythonCan says whether python3 imports everything the modes of
// testdata/avro_interop.py import (the script checks its own imports).
// Without them that part is skipped, naming what is missing, unless
// STREAMLEARNER_REQUIRE_PYTHON is set (CI installs them).
func pythonCan(t *testing.T, modes ...string) bool {
	t.Helper()
	out, err := exec.Command(python(), append([]string{"testdata/avro_interop.py", "missing"}, modes...)...).CombinedOutput()
	missing := strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", ", ")
	if err != nil {
		missing = fmt.Sprintf("python3 (%v: %s)", err, missing)
	}
	if missing == "" {
		return true
	}
	if os.Getenv("STREAMLEARNER_REQUIRE_PYTHON") != "" {
		t.Fatalf("avro_interop.py %s cannot run, it lacks %s", strings.Join(modes, ", "), missing)
	}
	t.Logf("avro_interop.py %s is skipped, python3 lacks %s", strings.Join(modes, ", "), missing)
	return false
}

// TestAvroEvalReplayRunAgree: the same 1500 Adult records as a JSON file,
// as Avro object container files (written by hamba/avro's container
// writer and, when python3 has it, by the Apache Avro library), as
// length-delimited Protobuf messages, and as an Avro topic: eval of each
// file, replay of the topic and the service's predictions on it are one
// run, margin for margin.
func TestAvroEvalReplayRunAgree(t *testing.T) {
	t.Parallel()
	bin := testBinary(t)
	dir := t.TempDir()
	addr, regURL := brokerWithRegistry(t, bin, dir, 1)
	const n = 1500
	data := filepath.Join(dir, "adult.jsonl")
	adultUnderscored(t, data, n)
	if out, err := exec.Command(bin, "produce", "--brokers", addr, "--topic", "in", "--data", data, "--key", "id", "--auto-create",
		"--format", "avro", "--schema", "../../testdata/schemas/adult.avsc", "--schema-registry", regURL).CombinedOutput(); err != nil {
		t.Fatalf("produce: %v\n%s", err, out)
	}

	// The files: the JSON events encoded record by record.
	avsc, _ := os.ReadFile("../../testdata/schemas/adult.avsc")
	proto, _ := os.ReadFile("../../testdata/schemas/adult.proto")
	as, err := codec.CompileSchema(1, codec.SchemaAvro, string(avsc), nil)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := codec.CompileSchema(1, codec.SchemaProtobuf, string(proto), nil)
	if err != nil {
		t.Fatal(err)
	}
	goAvro, pbFile := filepath.Join(dir, "go.avro"), filepath.Join(dir, "adult.pb")
	f, _ := os.Create(goAvro)
	enc, err := ocf.NewEncoder(string(avsc), f, ocf.WithBlockLength(100), ocf.WithCodec(ocf.Snappy))
	if err != nil {
		t.Fatal(err)
	}
	var delimited []byte
	lines, _ := os.ReadFile(data)
	for _, line := range bytes.Split(bytes.TrimSpace(lines), []byte("\n")) {
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		var obj map[string]any
		if err := d.Decode(&obj); err != nil {
			t.Fatal(err)
		}
		rec, err := as.AppendEncoded(nil, obj)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := enc.Write(rec[5:]); err != nil {
			t.Fatal(err)
		}
		if rec, err = ps.AppendEncoded(nil, obj); err != nil {
			t.Fatal(err)
		}
		delimited = append(binary.AppendUvarint(delimited, uint64(len(rec)-6)), rec[6:]...)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	os.WriteFile(pbFile, delimited, 0o600)

	learn := []string{"--learner", "projectron++:max=100", "--kernel", "rbf:gamma=0.5", "--label-field", "income", "--key-field", "id",
		"--positive", ">50K", "--scale", "online", "--seed", "3"}
	evals := map[string][]string{
		"json":     {"--data", data},
		"go-avro":  {"--data", goAvro},
		"protobuf": {"--data", pbFile, "--input", "protobuf", "--schema", "../../testdata/schemas/adult.proto"},
	}
	if pythonCan(t, "container") {
		pyAvro := filepath.Join(dir, "py.avro")
		if out, err := exec.Command(python(), "testdata/avro_interop.py", "container", data, "../../testdata/schemas/adult.avsc", pyAvro).CombinedOutput(); err != nil {
			t.Fatalf("python container: %v\n%s", err, out)
		}
		evals["python-avro"] = []string{"--data", pyAvro, "--input", "avro"}
	}
	var want offline.Result
	var wantPreds []byte
	for _, name := range []string{"json", "go-avro", "protobuf", "python-avro"} {
		if evals[name] == nil {
			continue
		}
		preds := filepath.Join(dir, name+".csv")
		args := append(append([]string{"eval", "--keep-order", "--format", "json", "--predictions", preds}, learn...), evals[name]...)
		res := evalJSON(t, args...)
		got, _ := os.ReadFile(preds)
		if len(res) != 1 || res[0].Examples != n || bytes.Count(got, []byte("\n")) != n+1 {
			t.Fatalf("eval %s: %+v, %d prediction lines", name, res, bytes.Count(got, []byte("\n")))
		}
		if wantPreds == nil {
			want, wantPreds = res[0], got
			continue
		}
		if res[0].MistakeRate != want.MistakeRate || res[0].Support != want.Support || res[0].Kappa != want.Kappa {
			t.Errorf("eval %s: %+v, the JSON file's %+v", name, res[0], want)
		}
		if !bytes.Equal(got, wantPreds) {
			t.Errorf("eval %s: predictions differ from the JSON file's", name)
		}
	}
	margins := map[int64]float64{} // by offset: line - 1
	for _, row := range bytes.Split(wantPreds, []byte("\n"))[1 : n+1] {
		cols := strings.Split(string(row), ",")
		line, _ := strconv.Atoi(cols[0])
		m, err := strconv.ParseFloat(cols[3], 64)
		if err != nil {
			t.Fatalf("prediction %q: %v", row, err)
		}
		margins[int64(line-1)] = m
	}

	// replay of the Avro topic.
	report := filepath.Join(dir, "replay.json")
	if _, err := execute(t, append([]string{"replay", "--brokers", addr, "--topic", "in", "--schema-registry", regURL, "--report", report, "--detector", "none"}, learn...)...); err != nil {
		t.Fatal(err)
	}
	var rep replay.Report
	if raw, err := os.ReadFile(report); err != nil || json.Unmarshal(raw, &rep) != nil || len(rep.Partitions) != 1 {
		t.Fatalf("replay report: %v", err)
	}
	if r := rep.Partitions[0].Learners[0]; r.MistakeRate != want.MistakeRate || float64(r.Support) != want.Support {
		t.Errorf("replay: mistakes %v support %d; eval: %v, %v", r.MistakeRate, r.Support, want.MistakeRate, want.Support)
	}

	// The service on the Avro topic.
	run := start(t, filepath.Join(dir, "run.log"), bin, append([]string{"run", "--brokers", addr, "--topic", "in", "--group", "g", "--output-topic", "out",
		"--input", "avro", "--schema-registry", regURL, "--metrics-addr", "", "--flush-interval", "50ms", "--auto-create"}, learn...)...)
	defer run.kill()
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "run.log"))
			t.Logf("run.log:\n%s", b)
		}
	})
	rd := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: "out", Partition: 0, MaxWait: 200 * time.Millisecond})
	defer kafkatest.CloseReader(t, rd)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; i < n; i++ {
		m, err := rd.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("prediction %d: %v", i, err)
		}
		p, err := codec.DecodePrediction(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if w, ok := margins[p.Offset]; !ok || p.Margin != w {
			t.Fatalf("run: offset %d margin %v, eval's %v", p.Offset, p.Margin, w)
		}
	}
	run.stop(t, 20*time.Second)
}

// registered is the newest schema of subject in the registry at url, as
// a schema source of its id.
func registered(t *testing.T, url, subject string) codec.StaticSchemas {
	t.Helper()
	r, err := http.Get(url + "/subjects/" + subject + "/versions/latest")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var got struct {
		ID         uint32
		Schema     string
		SchemaType string
	}
	if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	typ, err := codec.ParseSchemaType(got.SchemaType)
	if err != nil {
		t.Fatal(err)
	}
	s, err := codec.CompileSchema(got.ID, typ, got.Schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	return codec.StaticSchemas{got.ID: s}
}

// TestEvalBinaryFilesRefuseWhatTheyCannotRead: flags that do not fit the
// file, and a damaged container file, are errors that say why, before or
// instead of any result.
func TestEvalBinaryFilesRefuseWhatTheyCannotRead(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("../../testdata/adult.test.1000.avro")
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.avro")
	os.WriteFile(truncated, good[:len(good)/2], 0o600)
	base := []string{"eval", "--learner", "perceptron", "--label-field", "income", "--positive", ">50K", "--keep-order"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", "../../testdata/adult.test.1000.jsonl.gz", "--input", "avro"}, "not an Avro object container file"},
		{[]string{"--data", "../../testdata/adult.test.1000.avro", "--test", "../../testdata/adult.test.1000.jsonl.gz"}, "not an Avro object container file"},
		{[]string{"--data", "../../testdata/adult.test.1000.avro", "--schema", "../../testdata/schemas/adult.proto"}, "needs --input protobuf"},
		{[]string{"--data", "../../testdata/adult.test.1000.avro", "--input", "protobuf"}, "--schema FILE"},
		{[]string{"--data", "../../testdata/adult.test.1000.avro", "--input", "protobuf", "--schema", "../../testdata/schemas/adult.avsc"}, "--schema"},
		{[]string{"--data", truncated}, "truncated"},
	} {
		out, err := execute(t, append(base, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v (want an error saying %q)\n%s", c.args, err, c.want, out)
		}
	}
	// The protobuf schema read as delimited messages of an Avro file:
	// refused record by record, not a crash.
	if _, err := execute(t, append(base, "--data", "../../testdata/adult.test.1000.avro", "--input", "protobuf", "--schema", "../../testdata/schemas/adult.proto")...); err == nil {
		t.Error("an Avro file read as delimited Protobuf gave results")
	}
}
