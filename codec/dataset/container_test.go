package dataset

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hamba/avro/v2/ocf"

	"github.com/streamlearner/streamlearner/codec"
)

const containerSchema = `{"type":"record","name":"R","fields":[
	{"name":"id","type":"string"},
	{"name":"x","type":"double"},
	{"name":"tags","type":{"type":"array","items":"string"}},
	{"name":"note","type":["null","string"],"default":null},
	{"name":"label","type":"int"}]}`

// writeContainer writes n records with hamba/avro's own container writer
// (blocks of 7 records, so that records cross block boundaries) and
// returns the file's path.
func writeContainer(t *testing.T, dir string, codecName ocf.CodecName, n int) string {
	t.Helper()
	path := filepath.Join(dir, string(codecName)+".avro")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc, err := ocf.NewEncoder(containerSchema, f, ocf.WithCodec(codecName), ocf.WithBlockLength(7))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		rec := map[string]any{"id": fmt.Sprintf("r%d", i), "x": float64(i) / 4, "tags": []any{"a", strings.Repeat("b", i%3)}, "label": i%2*2 - 1, "note": nil}
		if i%5 == 0 {
			rec["note"] = map[string]any{"string": "five"}
		}
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAvroFileEveryCodec: a container file written by another library,
// in each block codec, gives every record, in order, cut exactly: each
// datum decodes to the fields it was written with.
func TestAvroFileEveryCodec(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []ocf.CodecName{ocf.Null, ocf.Deflate, ocf.Snappy, ocf.ZStandard} {
		path := writeContainer(t, dir, c, 100)
		if !IsAvroFile(path) {
			t.Fatalf("%s: not recognised", c)
		}
		a, err := OpenAvro(path, 9)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		dec, err := codec.NewFramedDecoder(codec.EventConfig{LabelField: "label", KeyField: "id"}, codec.FormatAvro, codec.StaticSchemas{9: a.Schema})
		if err != nil {
			t.Fatal(err)
		}
		var ev codec.Event
		got := 0
		err = a.Each(context.Background(), codec.Limits{}, func(n int, datum []byte) (bool, error) {
			if err := dec.DecodePayload(a.Schema, datum, &ev); err != nil {
				return false, fmt.Errorf("record %d: %w", n, err)
			}
			i := n - 1
			if string(ev.Key()) != fmt.Sprintf("r%d", i) || string(ev.Label()) != fmt.Sprint(i%2*2-1) {
				return false, fmt.Errorf("record %d: key %q label %q", n, ev.Key(), ev.Label())
			}
			got++
			return true, nil
		})
		a.Close()
		if err != nil || got != 100 || a.Codec != string(c) {
			t.Fatalf("%s: %d records (%s): %v", c, got, a.Codec, err)
		}
	}
}

// TestAvroFileCorrupted: a damaged container file is an error that says
// where, never a panic or a huge allocation.
func TestAvroFileCorrupted(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(writeContainer(t, dir, ocf.Null, 30))
	if err != nil {
		t.Fatal(err)
	}
	a, err := OpenAvro(filepath.Join(dir, "null.avro"), 1)
	if err != nil {
		t.Fatal(err)
	}
	sync := a.sync
	a.Close()
	headerEnd := bytes.Index(good, sync[:]) + 16
	// The first block's count and size (zig-zag varints), as written.
	bigSize := append(append(append([]byte{}, good[:headerEnd]...), 14), binary.AppendUvarint(nil, uint64(1)<<40)...)
	wrongSync := bytes.Clone(good)
	wrongSync[bytes.LastIndex(wrongSync, sync[:])] ^= 0xff
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"truncated":       {good[:len(good)-20], "truncated"},
		"huge block":      {bigSize, "corrupted"},
		"wrong sync":      {wrongSync, "sync marker"},
		"not a container": {[]byte(`{"id":1}`), "not an Avro object container"},
		"garbage in block": {func() []byte {
			b := bytes.Clone(good)
			for i := headerEnd + 3; i < headerEnd+40; i++ {
				b[i] = 0xff
			}
			return b
		}(), "block 1"},
	} {
		path := filepath.Join(dir, "bad.avro")
		os.WriteFile(path, c.data, 0o600)
		a, err := OpenAvro(path, 1)
		if err == nil {
			err = a.Each(context.Background(), codec.Limits{}, func(int, []byte) (bool, error) { return true, nil })
			a.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
}

// TestDelimited: length-delimited messages come back whole and in order;
// a length over the limit and a file ending inside a message are errors.
func TestDelimited(t *testing.T) {
	var b []byte
	for i := range 50 {
		msg := bytes.Repeat([]byte{byte(i)}, i*7)
		b = append(binary.AppendUvarint(b, uint64(len(msg))), msg...)
	}
	n := 0
	err := Delimited(context.Background(), bytes.NewReader(b), 1<<20, func(i int, msg []byte) (bool, error) {
		if i != n+1 || len(msg) != n*7 || (n > 0 && msg[0] != byte(n)) {
			return false, fmt.Errorf("message %d: %d bytes", i, len(msg))
		}
		n++
		return true, nil
	})
	if err != nil || n != 50 {
		t.Fatalf("%d messages: %v", n, err)
	}
	each := func(int, []byte) (bool, error) { return true, nil }
	if err := Delimited(context.Background(), bytes.NewReader(b[:len(b)-3]), 1<<20, each); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("truncated: %v", err)
	}
	if err := Delimited(context.Background(), bytes.NewReader(b), 100, each); err == nil || !strings.Contains(err.Error(), "the limit is 100") {
		t.Errorf("over the limit: %v", err)
	}
}

// FuzzAvroFile: any bytes, read as a container file, are records or an
// error, never a panic, a hang or an allocation past MaxBlockBytes.
func FuzzAvroFile(f *testing.F) {
	good, err := os.ReadFile("../../testdata/adult.test.1000.avro")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good[:4000])
	f.Add(good[:200])
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := openAvro(bytes.NewReader(b), "fuzz", 1)
		if err != nil {
			return
		}
		defer a.Close()
		a.Each(context.Background(), codec.Limits{}, func(int, []byte) (bool, error) { return true, nil })
	})
}
