package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
)

// TestTailTable: with short flags, -e ends at the end; a margin of 0
// (prediction −1) with label −1 reads "right yes"; records that are not
// predictions get one warning and a count.
func TestTailTable(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var msgs []kafka.Message
	for i, f := range []float64{0, 0.5, -0.25} {
		pred := -1
		if f > 0 {
			pred = 1
		}
		mistake := -f >= 0
		p := codec.Prediction{Topic: "in", Offset: int64(i), Predicted: pred, Margin: f, Label: -1, Mistake: &mistake, Learner: "x"}
		v, _ := codec.AppendPrediction(nil, &p)
		msgs = append(msgs, kafka.Message{Value: v})
	}
	// A prediction of another input partition, keyed and wrong: the
	// accuracies are each partition's.
	wrong := true
	other, _ := codec.AppendPrediction(nil, &codec.Prediction{Topic: "in", Partition: 1, Offset: 7, Key: "order-7", Predicted: 1, Margin: 0.3, Label: -1, Mistake: &wrong, Learner: "x"})
	msgs = append(msgs, kafka.Message{Value: other})
	msgs = append(msgs, kafka.Message{Value: []byte(`{"label": 1, "features": [1]}`)}, kafka.Message{Value: []byte(`{"label": -1, "features": [2]}`)})
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: "out", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	c, err := parse(t, "tail", "-b", b.Addr(), "-t", "out", "-e")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, warn bytes.Buffer
	if err := c.Tail.tail(ctx, &out, &warn); err != nil || ctx.Err() != nil {
		t.Fatalf("%v %v", err, ctx.Err())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 10 || !strings.HasPrefix(lines[0], "source") || !strings.Contains(lines[0], " key ") {
		t.Fatalf("table:\n%s", out.String())
	}
	for i, want := range []string{"in/0 0 - -1 0.0000 -1 yes 100.00%", "in/0 1 - +1 0.5000 -1 no 50.00%", "in/0 2 - -1 -0.2500 -1 yes 66.67%",
		"in/1 7 order-7 +1 0.3000 -1 no 0.00%", "", "input predictions labeled accuracy", "in/0 3 3 66.67%", "in/1 1 1 0.00%", "all 4 4 50.00%"} {
		if got := strings.Join(strings.Fields(lines[i+1])[:min(8, len(strings.Fields(lines[i+1])))], " "); got != want {
			t.Errorf("row %d: %q, want %q", i, got, want)
		}
	}
	if n := strings.Count(warn.String(), "is not a prediction"); n != 1 || !strings.Contains(warn.String(), "2 records of out were not predictions") {
		t.Errorf("warnings:\n%s", warn.String())
	}

	// JSON lines say "right" by the same rule.
	var rights []string
	for _, l := range tailLines(t, ctx, "-b", b.Addr(), "-t", "out", "-e", "--format", "json") {
		var p struct {
			Right *bool `json:"right"`
		}
		if err := json.Unmarshal([]byte(l), &p); err != nil || p.Right == nil {
			t.Fatalf("%q: %v", l, err)
		}
		rights = append(rights, strconv.FormatBool(*p.Right))
	}
	if strings.Join(rights, " ") != "true false true false" {
		t.Errorf("right %v, want true false true false", rights)
	}

	// A topic that does not exist is an error, not an endless wait.
	code, _, errOut := runCLI(t, "tail", "-b", b.Addr(), "-t", "nosuchtopic", "-e")
	if code != 1 || !strings.Contains(errOut, "topic nosuchtopic: no such topic") {
		t.Errorf("nosuchtopic: exit %d %q", code, errOut)
	}
}

// TestTailAccuracyIsEachInputPartitions: an accuracy over no labeled
// prediction has no value, in the table ("-") and in JSON (null, with
// "labeled": 0), and the summary says how many predictions were labeled;
// JSON gives the input partition's accuracy, as the table does; the
// summary lists the input partitions in order, whichever came first.
func TestTailAccuracyIsEachInputPartitions(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pred := func(part int32, off int64, predicted, label int) kafka.Message {
		p := codec.Prediction{Topic: "in", Partition: part, Offset: off, Predicted: predicted, Margin: float64(predicted) / 2, Label: label, Learner: "x"}
		v, _ := codec.AppendPrediction(nil, &p)
		return kafka.Message{Value: v}
	}
	// in/10 unlabeled (a --delayed-labels service), in/3 wrong, in/2 right
	// twice, then in/10 once more and in/2 wrong.
	msgs := []kafka.Message{pred(10, 0, 1, 0), pred(3, 0, 1, -1), pred(2, 0, 1, 1), pred(2, 1, -1, -1), pred(10, 1, -1, 0), pred(2, 2, 1, -1)}
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: "out", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	lines := tailLines(t, ctx, "-b", b.Addr(), "-t", "out", "-e")
	want := []string{"in/10 0 - +1 0.5000 - - - -", "in/3 0 - +1 0.5000 -1 no 0.00% 0.00%", "in/2 0 - +1 0.5000 1 yes 100.00% 100.00%", "in/2 1 - -1 -0.5000 -1 yes 100.00% 100.00%",
		"in/10 1 - -1 -0.5000 - - - -", "in/2 2 - +1 0.5000 -1 no 66.67% 66.67%",
		"", "input predictions labeled accuracy", "in/2 3 3 66.67%", "in/3 1 1 0.00%", "in/10 2 0 -", "all 6 4 50.00%"}
	if len(lines) != len(want)+1 {
		t.Fatalf("table:\n%s", strings.Join(lines, "\n"))
	}
	for i, w := range want {
		if got := strings.Join(strings.Fields(lines[i+1]), " "); got != w {
			t.Errorf("row %d: %q, want %q", i, got, w)
		}
	}

	var got []string
	for _, l := range tailLines(t, ctx, "-b", b.Addr(), "-t", "out", "-e", "--format", "json") {
		var p struct {
			Labeled  *uint64  `json:"labeled"`
			Accuracy *float64 `json:"running_accuracy"`
			Window   *float64 `json:"window_accuracy"`
		}
		if err := json.Unmarshal([]byte(l), &p); err != nil || p.Labeled == nil || !strings.Contains(l, `"running_accuracy":`) || !strings.Contains(l, `"window_accuracy":`) {
			t.Fatalf("%q: %v", l, err)
		}
		s := fmt.Sprintf("%d", *p.Labeled)
		for _, a := range []*float64{p.Accuracy, p.Window} {
			if a == nil {
				s += " null"
			} else {
				s += fmt.Sprintf(" %.4f", *a)
			}
		}
		got = append(got, s)
	}
	if w := []string{"0 null null", "1 0.0000 0.0000", "1 1.0000 1.0000", "2 1.0000 1.0000", "0 null null", "3 0.6667 0.6667"}; strings.Join(got, "; ") != strings.Join(w, "; ") {
		t.Errorf("JSON labeled, running and window accuracy:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(w, "\n"))
	}
}

// tailLines runs tail with args and returns the lines it printed.
func tailLines(t *testing.T, ctx context.Context, args ...string) []string {
	t.Helper()
	c, err := parse(t, append([]string{"tail"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := c.Tail.tail(ctx, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(out.String()), "\n")
}
