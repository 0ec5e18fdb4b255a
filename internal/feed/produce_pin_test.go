package feed

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/golden"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkatest"
)

// TestProducePinned pins what Produce sends (keys and values, in order)
// and the count and error it returns, for each kind of file, key, limit,
// gzip and encoding, and for the inputs it refuses, byte for byte.
func TestProducePinned(t *testing.T) {
	var topics []string
	for i := range 40 {
		topics = append(topics, fmt.Sprintf("t%d", i))
	}
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	files := map[string]string{
		"d.libsvm":     "3 1:0.5 4:1\n# comment\n-1 2:2\n\n{\"label\": true, \"features\": [1, 2], \"id\": \"x7\"}\n+1 7:1e-3\n",
		"e.jsonl":      `{"id":"e1","age":39,"income":"<=50K"}` + "\n\n" + `{"id":"e2","age":null,"tags":["a"],"income":">50K"}` + "\n" + `{"id":3,"income":""}` + "\n",
		"d.csv":        "id,age,w,income\ne1,39,State-gov,<=50K\ne2,,Private,>50K\ne3,40,,<=50K\n",
		"bad.libsvm":   "1 1:1\n1 2:x\n",
		"bad.jsonl":    `{"a":1}` + "\n" + `{"a":` + "\n",
		"bad.csv":      "a,b\n1,2\n1,2,3\n",
		"empty.libsvm": "# nothing\n",
	}
	for name, s := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600)
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write([]byte(s))
		zw.Close()
		os.WriteFile(filepath.Join(dir, name+".gz"), z.Bytes(), 0o600)
	}
	os.WriteFile(filepath.Join(dir, "broken.gz"), []byte{0x1f, 0x8b, 1, 2}, 0o600)
	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	wrap := func(ev []byte) ([]byte, error) {
		if bytes.Contains(ev, []byte(`"e3"`)) {
			return nil, fmt.Errorf("no e3")
		}
		return append([]byte("enc:"), ev...), nil
	}
	type run struct {
		data, key string
		limit     int
		encode    bool
	}
	var runs []run
	for _, data := range []string{"d.libsvm", "e.jsonl", "d.csv", "d.libsvm.gz", "e.jsonl.gz", "d.csv.gz"} {
		for _, key := range []string{"", "line", "id"} {
			runs = append(runs, run{data, key, 0, false})
		}
		runs = append(runs, run{data, "id", 2, false}, run{data, "", 1, true}, run{data, "id", 0, true})
	}
	for _, data := range []string{"bad.libsvm", "bad.jsonl", "bad.csv", "bad.csv.gz", "empty.libsvm", "broken.gz", "missing"} {
		runs = append(runs, run{data, "", 0, false})
	}
	var out strings.Builder
	topic := 0
	for _, r := range runs {
		cfg := ProduceConfig{Conn: conn, Topic: topics[topic], Data: filepath.Join(dir, r.data), Key: r.key, Limit: r.limit}
		if r.encode {
			cfg.Encode = wrap
		}
		n, err := Produce(context.Background(), cfg)
		fmt.Fprintf(&out, "%s key=%q limit=%d encode=%t: sent %d, %v\n", r.data, r.key, r.limit, r.encode, n, err)
		if n > 0 {
			for _, m := range readAll(t, b.Addr(), topics[topic], int(n)) {
				fmt.Fprintf(&out, "\t%q %q\n", m.Key, m.Value)
			}
			topic++
		}
	}
	// Paced: batches of rate/10 records, each reported.
	var progress []int64
	n, err := Produce(context.Background(), ProduceConfig{Conn: conn, Topic: topics[topic], Data: filepath.Join(dir, "d.libsvm"),
		Rate: 20, Progress: func(sent int64) { progress = append(progress, sent) }})
	fmt.Fprintf(&out, "rate 20: sent %d, %v, progress %v\n", n, err, progress)
	n, err = Produce(context.Background(), ProduceConfig{Conn: conn, Topic: "nosuch", Data: filepath.Join(dir, "d.libsvm")})
	fmt.Fprintf(&out, "missing topic: sent %d, %v\n", n, err)
	for _, cfg := range []ProduceConfig{{Conn: conn, Data: "x"}, {Conn: conn, Topic: "t"}, {Topic: "t", Data: "x"}} {
		n, err := Produce(context.Background(), cfg)
		fmt.Fprintf(&out, "%+v: sent %d, %v\n", cfg.Topic+" "+cfg.Data, n, err)
	}
	golden.Check(t, "produce.golden", []byte(strings.ReplaceAll(out.String(), dir, "DIR")))
}

// readAll reads n records from partition 0 of topic.
func readAll(t *testing.T, addr, topic string, n int) []kafka.Message {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer kafkatest.CloseReader(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got []kafka.Message
	for len(got) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("%s: %d of %d records: %v", topic, len(got), n, err)
		}
		got = append(got, m)
	}
	return got
}
