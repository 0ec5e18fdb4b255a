package pipeline

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/schemareg"
)

// registryStub is a Schema Registry that answers GET /schemas/ids/ID with
// what its answer function (which a test may swap) says.
type registryStub struct {
	mu     sync.Mutex
	answer func(id string) (status int, body string)
}

func startRegistryStub(t *testing.T, answer func(string) (int, string)) (*registryStub, string) {
	s := &registryStub{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		answer := s.answer
		s.mu.Unlock()
		var id string
		fmt.Sscanf(r.URL.Path, "/schemas/ids/%s", &id)
		status, body := answer(id)
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func (s *registryStub) set(answer func(string) (int, string)) {
	s.mu.Lock()
	s.answer = answer
	s.mu.Unlock()
}

func registryAnswer(typ, text string) func(string) (int, string) {
	b, _ := json.Marshal(map[string]string{"schema": text, "schemaType": typ})
	return func(string) (int, string) { return http.StatusOK, string(b) }
}

const registryAvro = `{"type":"record","name":"C","fields":[{"name":"id","type":"string"},{"name":"a","type":"double"},{"name":"label","type":"int"}]}`

// avroRecords encodes n records with schema id 1 of registryAvro.
func avroRecords(t *testing.T, n int) []kafka.Message {
	t.Helper()
	s, err := codec.CompileSchema(1, codec.SchemaAvro, registryAvro, nil)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []kafka.Message
	for i := range n {
		obj := map[string]any{"id": fmt.Sprintf("r%d", i), "a": json.Number(fmt.Sprint(float64(i%7) - 2.5)), "label": json.Number([]string{"1", "-1"}[(i/3)%2])}
		b, err := s.AppendEncoded(nil, obj)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, kafka.Message{Key: []byte(obj["id"].(string)), Value: b})
	}
	return msgs
}

// registryConfig is a member reading Avro records through the registry
// at url.
func registryConfig(t *testing.T, b interface{ Addr() string }, url string, rc schemareg.Config) Config {
	t.Helper()
	rc.URL = url
	reg, err := schemareg.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfigAt(t, b.Addr(), "perceptron")
	cfg.Model.Events, cfg.Model.Format, cfg.Registry = true, codec.FormatAvro, reg
	cfg.Model.Event = codec.EventConfig{KeyField: "id"}
	return cfg
}

// TestUnusableRegistryAnswerIsWaitedOut: a registry that answers 200
// with an empty schema is in trouble, not the records: they wait, none
// is dead-lettered, and all are predicted once it answers well. Before,
// the empty answer was cached for good and every record of the id was
// dead-lettered unknown_schema until a restart.
func TestUnusableRegistryAnswerIsWaitedOut(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	stub, url := startRegistryStub(t, registryAnswer("AVRO", ""))
	msgs := avroRecords(t, 200)
	produce(t, b, "in", msgs, &kafka.Hash{})
	runMember(t, registryConfig(t, b, url, schemareg.Config{MaxBackoff: 200 * time.Millisecond}))

	if got := readTopic(t, b, "out", 1, 2*time.Second); len(got) != 0 {
		t.Errorf("%d predictions while the registry answers an empty schema", len(got))
	}
	stub.set(registryAnswer("AVRO", registryAvro))
	if got := readTopic(t, b, "out", len(msgs), 30*time.Second); len(got) != len(msgs) {
		t.Errorf("%d predictions of %d records after the registry recovered", len(got), len(msgs))
	}
	if dead := readTopic(t, b, "in.dlq", 1, time.Second); len(dead) != 0 {
		t.Errorf("%d dead letters (the first: %v); want none", len(dead), dead[0].msg.Headers)
	}
}

// TestSchemaOverTheLimitIsDeadLettered: the records of a schema larger
// than the registry client takes (2 MiB, over the default 1 MiB) are
// dead letters, schema_too_large, counted; the records around them, of a
// schema of ordinary size, are predicted, and the partition goes on.
func TestSchemaOverTheLimitIsDeadLettered(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	huge := strings.TrimSuffix(registryAvro, "}") + `,"doc":"` + strings.Repeat("x", 2<<20) + `"}`
	good, big := registryAnswer("AVRO", registryAvro), registryAnswer("AVRO", huge)
	_, url := startRegistryStub(t, func(id string) (int, string) {
		if id == "2" {
			return big(id)
		}
		return good(id)
	})
	var msgs []kafka.Message
	for i, m := range avroRecords(t, 120) {
		if i%6 == 5 {
			m.Value = append(codec.AppendFrame(nil, 2), m.Value[5:]...)
		}
		msgs = append(msgs, m)
	}
	produce(t, b, "in", msgs, kafka.BalancerFunc(func(kafka.Message, ...int) int { return 1 }))
	cfg := registryConfig(t, b, url, schemareg.Config{})
	cfg.Metrics = NewMetrics(nil)
	runMember(t, cfg)

	preds := readTopic(t, b, "out", 100, 30*time.Second)
	dead := readTopic(t, b, "in.dlq", 20, 30*time.Second)
	if len(preds) != 100 || len(dead) != 20 {
		t.Fatalf("%d predictions and %d dead letters, want 100 and 20", len(preds), len(dead))
	}
	for _, d := range dead {
		h := headers(d.msg)
		if off, _ := strconv.Atoi(h[HeaderSourceOffset]); h[HeaderError] != string(codec.ReasonSchemaTooLarge) || off%6 != 5 {
			t.Errorf("offset %s: reason %q (%s)", h[HeaderSourceOffset], h[HeaderError], h[HeaderErrorDetail])
		}
	}
	if n := testutil.ToFloat64(cfg.Metrics.DeadLetters.WithLabelValues("1", string(codec.ReasonSchemaTooLarge))); n != 20 {
		t.Errorf("schema_too_large dead letters counted: %v, want 20", n)
	}
}

// TestJSONSchemaValidation: with ValidateJSON (--validate-json-schema),
// JSON Schema records that do not follow their schema are dead letters,
// schema_mismatch, and change nothing; the others are predicted with the
// same margins as a run that never saw the bad ones. Without it, they
// are read as Confluent's deserializer reads them by default.
func TestJSONSchemaValidation(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	const schema = `{"type":"object","properties":{"id":{"type":"string"},"a":{"type":"number","maximum":10},"label":{"enum":[-1,1]}},"required":["id","label"]}`
	var all, clean []kafka.Message
	for i := range 120 {
		v := fmt.Sprintf(`{"id":"r%d","a":%v,"label":%s}`, i, float64(i%7)-2.5, []string{"1", "-1"}[(i/3)%2])
		bad := i%6 == 5
		if bad {
			v = []string{`{"id":"x","a":1e6,"label":1}`, `{"id":"x","a":"big","label":-1}`, `{"id":"x","a":1}`}[i%3]
		}
		m := kafka.Message{Key: []byte(fmt.Sprint(i)), Value: append(codec.AppendFrame(nil, 1), v...)}
		all = append(all, m)
		if !bad {
			clean = append(clean, m)
		}
	}
	margins := func(msgs []kafka.Message, validate bool) (preds, dead []record) {
		t.Helper()
		b := startBroker(t, "in", "out", "in.dlq")
		_, url := startRegistryStub(t, registryAnswer("JSON", schema))
		produce(t, b, "in", msgs, kafka.BalancerFunc(func(kafka.Message, ...int) int { return 1 }))
		cfg := registryConfig(t, b, url, schemareg.Config{ValidateJSON: validate})
		cfg.Model.Format, cfg.Model.Learner = codec.FormatJSONSchema, "rbp:budget=30"
		stop, _ := runMember(t, cfg)
		defer stop()
		want := len(msgs)
		if validate {
			want = 100
		}
		preds = readTopic(t, b, "out", want, 30*time.Second)
		if validate {
			dead = readTopic(t, b, "in.dlq", len(msgs)-want, 30*time.Second)
		}
		return preds, dead
	}
	preds, dead := margins(all, true)
	if len(preds) != 100 || len(dead) != 20 {
		t.Fatalf("validating: %d predictions and %d dead letters, want 100 and 20", len(preds), len(dead))
	}
	for _, d := range dead {
		h := headers(d.msg)
		if h[HeaderError] != string(codec.ReasonSchemaMismatch) || !strings.Contains(h[HeaderErrorDetail], "does not follow") {
			t.Errorf("offset %s: %q (%s)", h[HeaderSourceOffset], h[HeaderError], h[HeaderErrorDetail])
		}
	}
	want, _ := margins(clean, false)
	for i := range want {
		p, _ := codec.DecodePrediction(preds[i].msg.Value)
		q, _ := codec.DecodePrediction(want[i].msg.Value)
		if p.Margin != q.Margin {
			t.Fatalf("prediction %d: margin %v, a run without the bad records: %v", i, p.Margin, q.Margin)
		}
	}
	if notValidated, _ := margins(all, false); len(notValidated) != 120 {
		t.Errorf("without validation: %d predictions of 120 records", len(notValidated))
	}
}
