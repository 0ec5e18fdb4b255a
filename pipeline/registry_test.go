package pipeline

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/schemareg"
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
	cfg.Events, cfg.Format, cfg.Registry = true, codec.FormatAvro, reg
	cfg.Event = codec.EventConfig{KeyField: "id"}
	return cfg
}

// TestUnusableRegistryAnswerIsWaitedOut: a registry that answers 200
// with an empty schema is in trouble, not the records: they wait, none
// is dead-lettered, and all are predicted once it answers well. Before,
// the empty answer was cached for good and every record of the id was
// dead-lettered unknown_schema until a restart.
func TestUnusableRegistryAnswerIsWaitedOut(t *testing.T) {
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
