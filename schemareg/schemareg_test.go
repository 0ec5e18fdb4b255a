package schemareg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamlearner/streamlearner/codec"
)

const avroText = `{"type":"record","name":"C","fields":[{"name":"a","type":"double"},{"name":"label","type":"int"}]}`

// fakeRegistry answers GET /schemas/ids/ID with what answer says, which
// the test may change as it goes; it counts the requests.
type fakeRegistry struct {
	*httptest.Server
	mu       sync.Mutex
	answer   func(id string) (status int, body string)
	requests int
}

func newFakeRegistry(t *testing.T, answer func(id string) (int, string)) *fakeRegistry {
	f := &fakeRegistry{answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests++
		answer := f.answer
		f.mu.Unlock()
		status, body := answer(strings.TrimPrefix(r.URL.Path, "/schemas/ids/"))
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeRegistry) set(answer func(id string) (int, string)) {
	f.mu.Lock()
	f.answer = answer
	f.mu.Unlock()
}

func (f *fakeRegistry) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

func schemaAnswer(typ, text string) (int, string) {
	b, _ := json.Marshal(map[string]string{"schema": text, "schemaType": typ})
	return http.StatusOK, string(b)
}

func notFoundAnswer(string) (int, string) {
	return http.StatusNotFound, `{"error_code":40403,"message":"Schema not found"}`
}

// TestUnusableAnswersAreWaitedOutNotCached: a 200 whose schema cannot be
// used (empty, not a schema of its type, a type the service does not
// know) and a 404 that is not the registry's own "not found" are registry
// faults: Ensure waits through them, nothing about the id is cached, and
// once the registry answers well the schema is there. Before, the first
// bad answer was cached for good and every record of the id was
// unknown_schema until a restart.
func TestUnusableAnswersAreWaitedOutNotCached(t *testing.T) {
	bad := []func(string) (int, string){
		func(string) (int, string) { return schemaAnswer("AVRO", "") },
		func(string) (int, string) { return schemaAnswer("JSON", "") },
		func(string) (int, string) { return schemaAnswer("PROTOBUF", "") },
		func(string) (int, string) { return schemaAnswer("AVRO", `{"type":"record","name":"C","fie`) },
		func(string) (int, string) { return http.StatusOK, `{"schema":"{}","schemaType":"XML"}` },
		func(string) (int, string) { return http.StatusNotFound, "<html>no such page</html>" },
	}
	for i, answer := range bad {
		reg := newFakeRegistry(t, answer)
		c, err := New(Config{URL: reg.URL, MaxBackoff: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		framed := codec.AppendFrame(nil, 7)
		var waits []error
		err = c.Ensure(context.Background(), framed, func(err error, attempt int) {
			waits = append(waits, err)
			if attempt == 3 {
				reg.set(func(string) (int, string) { return schemaAnswer("AVRO", avroText) })
			}
		})
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if len(waits) != 3 {
			t.Errorf("answer %d: Ensure waited %d times, want 3 (until the registry answered well)", i, len(waits))
		}
		s, err := c.Schema(7)
		if err != nil || s == nil || s.Type != codec.SchemaAvro {
			t.Errorf("answer %d: after the registry recovered: %v, %v (waits: %v)", i, s, err, waits)
		}
	}
}

// TestNotFoundIsRememberedBriefly: the registry's 404 makes the id's
// records unknown_schema without asking again for NegativeTTL, then the
// registry is asked again and a schema registered meanwhile is found.
func TestNotFoundIsRememberedBriefly(t *testing.T) {
	reg := newFakeRegistry(t, notFoundAnswer)
	c, err := New(Config{URL: reg.URL, NegativeTTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	framed := codec.AppendFrame(nil, 7)
	for range 5 {
		if err := c.Ensure(context.Background(), framed, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Schema(7); !errors.Is(err, codec.ErrUnknownSchema) {
			t.Fatalf("after a 404: %v, want unknown schema", err)
		}
	}
	if n := reg.count(); n != 1 {
		t.Errorf("%d requests for 5 records within the TTL, want 1", n)
	}
	reg.set(func(string) (int, string) { return schemaAnswer("AVRO", avroText) })
	time.Sleep(400 * time.Millisecond)
	if err := c.Ensure(context.Background(), framed, nil); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Schema(7); err != nil || s.Type != codec.SchemaAvro {
		t.Errorf("after the TTL: %v, %v; want the schema registered meanwhile", s, err)
	}
	if d := (Config{}).withDefaults().NegativeTTL; d > 5*time.Second {
		t.Errorf("a 404 is remembered %v by default", d)
	}
}
