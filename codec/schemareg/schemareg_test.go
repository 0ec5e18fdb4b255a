package schemareg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
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

// TestSchemaThatDoesNotCompileIsADeadLetterReason: a schema the registry
// answers whole but that does not compile (an unknown Avro type, a JSON
// Schema pattern with a lookahead, a remote $ref, an unknown $schema, a
// Protobuf field of no known type) is the schema's fault: Ensure does not
// wait, the registry is asked once, and Schema gives the compile error as
// codec.ErrBadSchema, which the decoder dead-letters (bad_schema). Before,
// each was waited out as an outage, for ever, holding its partition.
func TestSchemaThatDoesNotCompileIsADeadLetterReason(t *testing.T) {
	cases := []struct{ typ, text, says string }{
		{"AVRO", `{"type":"record","name":"C","fields":[{"name":"a","type":"nosuchtype"}]}`, "nosuchtype"},
		{"JSON", `{"type":"object","properties":{"a":{"type":"string","pattern":"^(?=a)b"}}}`, "pattern"},
		{"JSON", `{"$ref":"https://example.com/s.json"}`, "example.com"},
		{"JSON", `{"$schema":"https://example.com/meta","type":"object"}`, "example.com/meta"},
		{"PROTOBUF", `syntax = "proto3"; message M { Nope n = 1; }`, "Nope"},
		{"JSON", anyOfLevels(28), "evaluate one value"},
	}
	for i, tc := range cases {
		reg := newFakeRegistry(t, func(string) (int, string) { return schemaAnswer(tc.typ, tc.text) })
		c, err := New(Config{URL: reg.URL, ValidateJSON: true, MaxBackoff: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		framed := codec.AppendFrame(nil, 7)
		for range 3 {
			if err := c.Ensure(context.Background(), framed, func(err error, attempt int) {
				t.Fatalf("case %d: waited out as an outage: %v", i, err)
			}); err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
		}
		if n := reg.count(); n != 1 {
			t.Errorf("case %d: the registry asked %d times, want 1", i, n)
		}
		_, err = c.Schema(7)
		if !errors.Is(err, codec.ErrBadSchema) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("case %d: %v; want a bad schema naming %q", i, err, tc.says)
		}
		dec, err := codec.NewFramedDecoder(codec.EventConfig{}, codec.FormatRegistry, c)
		if err != nil {
			t.Fatal(err)
		}
		var ev codec.Event
		var ce *codec.Error
		if err := dec.Decode(append(framed, '{', '}'), &ev); !errors.As(err, &ce) || ce.Reason != codec.ReasonBadSchema {
			t.Errorf("case %d: decoding a record: %v, want %s", i, err, codec.ReasonBadSchema)
		}
	}
}

// anyOfLevels is a JSON Schema of n levels, each an anyOf of two $refs to
// the level below, over one that fails: 2^n evaluations of a value.
func anyOfLevels(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"allOf":[{"$ref":"#/definitions/l%d"}],"definitions":{"l0":{"required":["no-such-field"]}`, n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `,"l%d":{"anyOf":[{"$ref":"#/definitions/l%d"},{"$ref":"#/definitions/l%d"}]}`, i, i-1, i-1)
	}
	b.WriteString("}}")
	return b.String()
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

func avroOfBytes(n int) string {
	pad := max(n-len(avroText)-len(`,"doc":""`), 0)
	return strings.TrimSuffix(avroText, "}") + `,"doc":"` + strings.Repeat("x", pad) + `"}`
}

// TestSchemaOverTheLimitIsADeadLetterReason: a schema larger than
// MaxSchemaBytes (by its text, by the texts it references, or by an
// answer too large to read, with or without its length announced) is not
// taken: its records get codec.ErrSchemaTooLarge, at once (no waiting),
// and the answer is remembered as a 404 is.
func TestSchemaOverTheLimitIsADeadLetterReason(t *testing.T) {
	const limit = 4096
	big := avroOfBytes(limit + 1)
	proto := func(refs string) (int, string) {
		b, _ := json.Marshal(map[string]any{"schema": `syntax = "proto3"; import "a.proto"; message M { A a = 1; }`, "schemaType": "PROTOBUF",
			"references": []map[string]any{{"name": "a.proto", "subject": "a", "version": 1}}})
		return http.StatusOK, string(b)
	}
	for name, answer := range map[string]http.HandlerFunc{
		"text": func(w http.ResponseWriter, r *http.Request) {
			_, body := schemaAnswer("AVRO", big)
			fmt.Fprint(w, body)
		},
		"answer with its length": func(w http.ResponseWriter, r *http.Request) {
			_, body := schemaAnswer("AVRO", strings.Repeat("x", int(answerMax(limit))))
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			fmt.Fprint(w, body)
		},
		"answer without its length": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"schemaType":"AVRO","schema":"`)
			w.(http.Flusher).Flush() // chunked: no Content-Length
			for range answerMax(limit)/1024 + 1 {
				fmt.Fprint(w, strings.Repeat("x", 1024))
			}
			fmt.Fprint(w, `"}`)
		},
		"references": func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/subjects/a/versions/1") {
				b, _ := json.Marshal(map[string]any{"subject": "a", "version": 1, "id": 2, "schemaType": "PROTOBUF",
					"schema": `syntax = "proto3"; message A { double x = 1; }` + strings.Repeat("\n", limit)})
				fmt.Fprint(w, string(b))
				return
			}
			_, body := proto("")
			fmt.Fprint(w, body)
		},
	} {
		var requests int
		var mu sync.Mutex
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			requests++
			mu.Unlock()
			answer(w, r)
		}))
		c, err := New(Config{URL: srv.URL, MaxSchemaBytes: limit, MaxBackoff: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			err := c.Ensure(context.Background(), codec.AppendFrame(nil, 1), func(err error, _ int) {
				t.Fatalf("%s: Ensure waited: %v", name, err)
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Schema(1); !errors.Is(err, codec.ErrSchemaTooLarge) {
				t.Errorf("%s: %v, want too large", name, err)
			}
		}
		mu.Lock()
		if n := requests; n > 2 {
			t.Errorf("%s: %d requests for 3 records within the TTL", name, n)
		}
		mu.Unlock()
		srv.Close()
	}
	// At the limit, the schema is taken.
	reg := newFakeRegistry(t, func(string) (int, string) { return schemaAnswer("AVRO", avroOfBytes(limit)) })
	c, _ := New(Config{URL: reg.URL, MaxSchemaBytes: limit})
	if err := c.Fetch(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Schema(1); err != nil || s == nil {
		t.Errorf("a schema of %d bytes, the limit: %v", len(avroOfBytes(limit)), err)
	}
}

// TestHugeSchemaIsRefusedCheaply: refusing a 100 MB schema (the answer
// that took a process from 28 MB to 16.9 GB) allocates no more than the
// most a schema's answer may take, not the schema.
func TestHugeSchemaIsRefusedCheaply(t *testing.T) {
	reg := newFakeRegistry(t, func(string) (int, string) { return http.StatusOK, "" })
	reg.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"schemaType":"AVRO","schema":"{\"type\":\"record\",\"name\":\"R\",\"doc\":\"`)
		chunk := strings.Repeat("x", 64<<10)
		for range 100 << 20 / len(chunk) {
			if _, err := fmt.Fprint(w, chunk); err != nil {
				return // the client stopped reading
			}
		}
		fmt.Fprint(w, `\",\"fields\":[]}"}`)
	})
	c, err := New(Config{URL: reg.URL})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := c.Fetch(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if _, err := c.Schema(1); !errors.Is(err, codec.ErrSchemaTooLarge) {
		t.Fatalf("a 100 MB schema: %v", err)
	}
	// The answer is read up to 6 MiB + 64 KiB, by io.ReadAll, which
	// doubles as it grows, and the server's side allocates too: 15 MB in
	// all, 32 MB under the race detector. Reading the schema would take
	// more than it.
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Errorf("refusing a 100 MB schema allocated %d MB", n>>20)
	}
}

// TestCacheIsBoundedInBytes: the cache's estimated cost never passes
// CacheMaxBytes, the least recently used going first, and the schema just
// fetched is always kept.
func TestCacheIsBoundedInBytes(t *testing.T) {
	const limit = 4096
	reg := newFakeRegistry(t, func(id string) (int, string) {
		if id[len(id)-1]%2 == 0 {
			return schemaAnswer("PROTOBUF", `syntax = "proto3"; message M { double x = 1; }`+strings.Repeat(" ", limit-60))
		}
		return schemaAnswer("AVRO", avroOfBytes(limit))
	})
	c, err := New(Config{URL: reg.URL, MaxSchemaBytes: limit, CacheMaxBytes: MinCacheBytes(limit, false)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{URL: reg.URL, MaxSchemaBytes: limit, CacheMaxBytes: MinCacheBytes(limit, false) - 1}); err == nil {
		t.Error("a cache that cannot hold two schemas of the limit was taken")
	}
	for id := uint32(1); id <= 60; id++ {
		if err := c.Fetch(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if s, err := c.Schema(id); err != nil || s == nil {
			t.Fatalf("schema %d, just fetched: %v", id, err)
		}
		c.mu.Lock()
		n, b := len(c.cache), c.bytes
		var sum int64
		for _, e := range c.cache {
			sum += e.cost
		}
		c.mu.Unlock()
		if b > c.cfg.CacheMaxBytes || sum != b {
			t.Fatalf("after schema %d: %d entries cost %d (counted %d), bound %d", id, n, sum, b, c.cfg.CacheMaxBytes)
		}
	}
	// A schema used recently outlives one fetched later but not used
	// since: 59 (Avro) and 60 (Protobuf) are kept; 62 (Protobuf) needs
	// room, and 60 goes. Ensure, which the worker calls right before
	// decoding, is a use: the schema is then the last to go.
	if err := c.Ensure(context.Background(), codec.AppendFrame(nil, 59), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Fetch(context.Background(), 62); err != nil {
		t.Fatal(err)
	}
	_, err59 := c.Schema(59)
	_, err60 := c.Schema(60)
	if err59 != nil || err60 == nil {
		t.Errorf("schema 59, used last: %v; schema 60, fetched after it: %v (want it dropped)", err59, err60)
	}
}

// TestOneFetchOfAnIdAtATime: the partitions that meet a new schema id at
// once make one request between them, and when it fails they share its
// error (each then backs off) rather than asking again in turn.
func TestOneFetchOfAnIdAtATime(t *testing.T) {
	var mu sync.Mutex
	var busy, most, requests int
	fail := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		busy++
		requests++
		most = max(most, busy)
		failing := fail
		mu.Unlock()
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		busy--
		mu.Unlock()
		if failing {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, body := schemaAnswer("AVRO", avroText)
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	fetchAll := func() (failed int) {
		var wg sync.WaitGroup
		var fmu sync.Mutex
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.Fetch(context.Background(), 3); err != nil {
					fmu.Lock()
					failed++
					fmu.Unlock()
				}
			}()
		}
		wg.Wait()
		return failed
	}
	failed := fetchAll()
	mu.Lock()
	defer mu.Unlock()
	if failed != 8 || requests != 1 || most != 1 {
		t.Errorf("registry down: %d of 8 fetches failed with %d requests (%d at once); want 8 and 1", failed, requests, most)
	}
	fail, requests = false, 0
	mu.Unlock()
	failed = fetchAll()
	mu.Lock()
	if failed != 0 || requests != 1 || most != 1 {
		t.Errorf("registry up: %d of 8 fetches failed with %d requests (%d at once); want 0 and 1", failed, requests, most)
	}
	if s, err := c.Schema(3); err != nil || s == nil {
		t.Errorf("schema 3: %v", err)
	}
}
