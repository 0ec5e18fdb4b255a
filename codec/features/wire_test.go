package features

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
)

// wireSchema compiles testdata/schemas/adult.<ext> as schema id.
func wireSchema(t testing.TB, typ codec.SchemaType, ext string, id uint32) *codec.Schema {
	t.Helper()
	text, err := os.ReadFile("../../testdata/schemas/adult." + ext)
	if err != nil {
		t.Fatal(err)
	}
	s, err := codec.CompileSchema(id, typ, string(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// underscored is an Adult JSON line with the names Avro and protobuf take
// ('_' for '-'), as a JSON line and as the object produce encodes.
func underscored(t testing.TB, line []byte) ([]byte, map[string]any) {
	t.Helper()
	var obj map[string]any
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&obj); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for k, v := range obj {
		out[strings.ReplaceAll(k, "-", "_")] = v
	}
	js, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return js, out
}

// TestWireFormatsGiveTheJSONFeatures writes 3000 Adult records as JSON
// events, Avro and protobuf, and featurizes each with the online scaler:
// the vectors must be the same bit for bit, record after record (the
// scaler's state included, or later records would differ), although the
// JSON says education-num where the schemas say education_num.
func TestWireFormatsGiveTheJSONFeatures(t *testing.T) {
	f, err := os.Open("../../testdata/adult.train.3000.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	schemas := codec.StaticSchemas{1: wireSchema(t, codec.SchemaAvro, "avsc", 1), 2: wireSchema(t, codec.SchemaProtobuf, "proto", 2)}
	cfg := codec.EventConfig{LabelField: "income", KeyField: "id"}
	jd, err := codec.NewEventDecoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	type side struct {
		name string
		id   uint32
		dec  *codec.FramedDecoder
		fz   *Featurizer
		ev   codec.Event
	}
	var sides []*side
	for _, s := range []struct {
		name string
		id   uint32
		f    codec.Format
	}{{"avro", 1, codec.FormatAvro}, {"protobuf", 2, codec.FormatProtobuf}} {
		d, err := codec.NewFramedDecoder(cfg, s.f, schemas)
		if err != nil {
			t.Fatal(err)
		}
		sides = append(sides, &side{name: s.name, id: s.id, dec: d, fz: featurizer(t, Config{Scale: ScaleOnline, AllowEmpty: true})})
	}
	jfz := featurizer(t, Config{Scale: ScaleOnline, AllowEmpty: true})
	var jev codec.Event
	sc := bufio.NewScanner(zr)
	n := 0
	for sc.Scan() {
		js := sc.Bytes()
		_, obj := underscored(t, js)
		if err := jd.Decode(js, &jev); err != nil {
			t.Fatal(err)
		}
		want, err := jfz.Vector(&jev)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sides {
			b, err := schemas[s.id].AppendEncoded(nil, obj)
			if err != nil {
				t.Fatalf("%s: encode %s: %v", s.name, js, err)
			}
			if err := s.dec.Decode(b, &s.ev); err != nil {
				t.Fatalf("%s: record %d: %v", s.name, n, err)
			}
			if string(s.ev.Label()) != string(jev.Label()) || string(s.ev.Key()) != string(jev.Key()) {
				t.Fatalf("%s: record %d: label %q key %q, JSON %q %q", s.name, n, s.ev.Label(), s.ev.Key(), jev.Label(), jev.Key())
			}
			got, err := s.fz.Vector(&s.ev)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Idx) != len(want.Idx) {
				t.Fatalf("%s: record %d: %d features, JSON %d", s.name, n, len(got.Idx), len(want.Idx))
			}
			for i := range got.Idx {
				if got.Idx[i] != want.Idx[i] || math.Float64bits(got.Val[i]) != math.Float64bits(want.Val[i]) {
					t.Fatalf("%s: record %d feature %d: %d:%v, JSON %d:%v", s.name, n, i, got.Idx[i], got.Val[i], want.Idx[i], want.Val[i])
				}
			}
		}
		n++
	}
	if n != 3000 {
		t.Fatalf("%d records", n)
	}
}

// BenchmarkEventAdultWire is BenchmarkEventAdult for the same record in
// the wire format, Avro and protobuf: decode and featurize, ≤ 1 µs and no
// allocation per record.
func BenchmarkEventAdultWire(b *testing.B) {
	schemas := codec.StaticSchemas{1: wireSchema(b, codec.SchemaAvro, "avsc", 1), 2: wireSchema(b, codec.SchemaProtobuf, "proto", 2)}
	_, obj := underscored(b, []byte(adultLine))
	for _, c := range []struct {
		name string
		id   uint32
		f    codec.Format
	}{{"avro", 1, codec.FormatAvro}, {"protobuf", 2, codec.FormatProtobuf}} {
		in, err := schemas[c.id].AppendEncoded(nil, obj)
		if err != nil {
			b.Fatal(err)
		}
		d, err := codec.NewFramedDecoder(codec.EventConfig{LabelField: "income", KeyField: "id"}, c.f, schemas)
		if err != nil {
			b.Fatal(err)
		}
		for _, scale := range []Scale{ScaleNone, ScaleOnline} {
			b.Run(c.name+"/scale="+scale.String(), func(b *testing.B) {
				f := featurizer(b, Config{Scale: scale})
				var ev codec.Event
				b.ReportAllocs()
				b.SetBytes(int64(len(in)))
				for b.Loop() {
					if err := d.Decode(in, &ev); err != nil {
						b.Fatal(err)
					}
					if _, err := f.Vector(&ev); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(c.name+"/decode-only", func(b *testing.B) {
			var ev codec.Event
			b.ReportAllocs()
			for b.Loop() {
				if err := d.Decode(in, &ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
