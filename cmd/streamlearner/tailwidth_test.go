package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
)

// tail's table columns moved from one batch of predictions to the next
// (each batch aligned on its own widest cell); and a tail that started past
// the end printed nothing at all.
func TestTailColumnsStayAndPastTheEndSaysWhy(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var msgs []kafka.Message
	for i := range 120 {
		// Short keys and margins first, long ones after the first batches.
		key, margin := fmt.Sprint(i), 0.5
		if i >= 100 {
			key, margin = strings.Repeat("k", 40)+fmt.Sprint(i), -1234.5
		}
		p := codec.Prediction{Topic: "in", Offset: int64(i) * 1000003, Key: key, Predicted: 1, Margin: margin, Label: 1, Learner: "x"}
		v, _ := codec.AppendPrediction(nil, &p)
		msgs = append(msgs, kafka.Message{Value: v})
	}
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: "out", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	lines := tailLines(t, ctx, "-b", b.Addr(), "-t", "out", "-e")
	width := utf8.RuneCountInString(lines[0])
	for i, l := range lines[:121] {
		if n := utf8.RuneCountInString(l); n != width {
			t.Fatalf("row %d is %d runes wide, the header %d:\n%s\n%s", i, n, width, lines[0], l)
		}
	}
	// Right-aligned under its heading (runes: the cut key ends in "…").
	if end := strings.Index(lines[0], "margin") + len("margin"); string([]rune(lines[120])[end-len("-1234.5000"):end]) != "-1234.5000" {
		t.Errorf("margin not under its heading:\n%s\n%s", lines[0], lines[120])
	}

	// A number too wide for its column pushes the row, but is never cut.
	if row := tailRow("a-long-input-topic-name/12", "123456789012345", "k", "+1", "-123456789.0000", "1", "yes", "100.00%", "100.00%"); !strings.Contains(row, "a-long-input-topic-name/12") ||
		!strings.Contains(row, " 123456789012345 ") || !strings.Contains(row, " -123456789.0000 ") {
		t.Errorf("cut: %q", row)
	}

	c, err := parse(t, "tail", "-b", b.Addr(), "-t", "out", "-e", "--from", "99999")
	if err != nil {
		t.Fatal(err)
	}
	var out, warn bytes.Buffer
	if err := c.Tail.tail(ctx, &out, &warn); err != nil {
		t.Fatal(err)
	}
	if want := "topic out holds 120 records (partition 0: offsets 0 to 119)"; out.Len() != 0 || !strings.Contains(warn.String(), want) {
		t.Errorf("past the end: printed %q, warned %q; want %q", out.String(), warn.String(), want)
	}
}
