package pipeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/streamlearner/streamlearner/internal/model"
)

// syncBuffer is a log sink the workers may write to concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An auto learner's changes of champion are logged at info only when a
// duel decides them (the rung's leader changes many times while the search
// halves: those are at debug), numbered by labeled record as the model
// numbers them, with what decided them.
func TestAutoLogsDuelsAtInfo(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	msgs := boardTopic(t, b, 2400, 1500)
	cfg := testConfig(t, b, "auto:rung=50,window=300,width=8")
	var sink syncBuffer
	cfg.Log = zerolog.New(&sink).Level(zerolog.InfoLevel)
	runMember(t, cfg)
	predictionsByOffset(t, b, len(msgs))
	twin, err := model.New(cfg.ModelConfig(0))
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		Offset  int64  `json:"offset"`
		Labeled uint64 `json:"labeled_record"`
		To      string `json:"to"`
		Why     string `json:"why"`
	}
	var duels []line
	halving := 0
	for off := range int64(len(msgs)) {
		r, err := twin.Step(msgs[off].Value)
		if err != nil {
			t.Fatal(err)
		}
		switch ch := r.SearchChange; {
		case r.SearchTo == "":
		case ch.Why != nil && ch.Why.Rule == "duel":
			duels = append(duels, line{Offset: off, Labeled: ch.From(), To: r.SearchTo, Why: ch.Why.String()})
		default:
			halving++
		}
	}
	var logged []line
	sc := bufio.NewScanner(bytes.NewReader([]byte(sink.String())))
	for sc.Scan() {
		var l struct {
			line
			Msg string `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "champion switched" {
			logged = append(logged, l.line)
		}
	}
	if halving == 0 || len(duels) == 0 {
		t.Fatalf("the stream should change champions while halving (%d) and by duels (%d)", halving, len(duels))
	}
	if len(logged) != len(duels) {
		t.Fatalf("%d changes logged at info, want the %d decided by duels (%d more while halving):\n%s", len(logged), len(duels), halving, sink.String())
	}
	for i, d := range duels {
		if logged[i] != d {
			t.Fatalf("change %d logged as %+v, the model made %+v", i, logged[i], d)
		}
	}
}

// `run --learner auto --classes auto` at every other default starts: the
// classes share four times auto's memory= (64 MiB), and the estimate
// counts that, not memory= once for each of the up to 100 classes.
func TestAutoManyClassesStartAtDefaults(t *testing.T) {
	b := startBroker(t)
	for _, snaps := range []Checkpointer{nil, &memCheckpoints{}} {
		cfg := testConfig(t, b, "auto")
		cfg.Model.Classes, cfg.Checkpoints = []string{model.Auto}, snaps
		if err := cfg.Validate(); err != nil {
			t.Fatalf("checkpoints %v: %v", snaps != nil, err)
		}
		mem, per, err := cfg.ModelMemory()
		if err != nil || mem.Held != 256<<20 || mem.Peak > cfg.MaxModelBytes || !strings.Contains(per, "memory= shared among them") {
			t.Fatalf("checkpoints %v: estimate %+v, %q, %v", snaps != nil, mem, per, err)
		}
	}
}
