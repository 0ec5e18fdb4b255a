package codec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The schema of the tests' connection records, with every kind of value.
const connAvro = `{"type":"record","name":"Conn","namespace":"test","fields":[
 {"name":"id","type":"string"},
 {"name":"duration","type":"long"},
 {"name":"protocol","type":{"type":"enum","name":"Proto","symbols":["tcp","udp","icmp"]}},
 {"name":"bytes","type":"double"},
 {"name":"count","type":"int"},
 {"name":"urgent","type":"boolean"},
 {"name":"service","type":["null","string"],"default":null},
 {"name":"flags","type":{"type":"array","items":"string"}},
 {"name":"rates","type":{"type":"array","items":"double"}},
 {"name":"hosts","type":{"type":"map","values":"double"}},
 {"name":"src","type":{"type":"record","name":"Host","fields":[{"name":"port","type":"int"},{"name":"zone","type":"string"}]}},
 {"name":"label","type":["null","string"]}
]}`

// connValue is a record of connAvro and its JSON twin.
func connValue(i int) (map[string]any, string) {
	protos := []string{"tcp", "udp", "icmp"}
	var service any
	svc := "null"
	if i%3 != 0 {
		service = fmt.Sprintf("svc%d", i%5)
		svc = fmt.Sprintf("%q", service)
	}
	label := "normal."
	if i%4 == 0 {
		label = "smurf."
	}
	v := map[string]any{
		"id": fmt.Sprintf("c%d", i), "duration": int64(i * 7), "protocol": protos[i%3],
		"bytes": float64(i) * 1.25, "count": int32(i % 11), "urgent": i%2 == 0,
		"service": service, "flags": []any{"SF", fmt.Sprintf("f%d", i%3)},
		"rates": []any{0.5, float64(i) / 10}, "hosts": map[string]any{"a": 1.5, "b": float64(i)},
		"src": map[string]any{"port": int32(1000 + i), "zone": "z1"}, "label": label,
	}
	j := fmt.Sprintf(`{"id":"c%d","duration":%d,"protocol":"%s","bytes":%v,"count":%d,"urgent":%v,"service":%s,"flags":["SF","f%d"],"rates":[0.5,%v],"hosts":{"a":1.5,"b":%v},"src":{"port":%d,"zone":"z1"},"label":"%s"}`,
		i, i*7, protos[i%3], float64(i)*1.25, i%11, i%2 == 0, svc, i%3, float64(i)/10, float64(i), 1000+i, label)
	return v, j
}

// eventText renders an event's label, key and fields, for comparison.
// The fields are sorted: their order does not change the features (the
// featurizer sorts them by index), and the order of a map's entries is
// the writer's.
func eventText(ev *Event) string {
	var fields []string
	for _, f := range ev.Fields {
		s := fmt.Sprintf("%s:%s", ev.Name(f), f.Kind)
		if f.Kind == FieldNumeric {
			s += fmt.Sprintf("=%x", math.Float64bits(f.Num))
		} else {
			s += fmt.Sprintf("=%q", ev.Text(f))
		}
		fields = append(fields, s)
	}
	sort.Strings(fields)
	return fmt.Sprintf("label=%q key=%q %s", ev.Label(), ev.Key(), strings.Join(fields, " "))
}

func mustAvro(t testing.TB, text string, id uint32) *Schema {
	t.Helper()
	s, err := CompileSchema(id, SchemaAvro, text, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAvroEventsAreTheirJSONTwins(t *testing.T) {
	for _, cfg := range []EventConfig{
		{KeyField: "id"},
		{KeyField: "id", Ignore: []string{"rates.1"}, Schema: map[string]FieldKind{"count": FieldCategorical, "flags": FieldText}},
	} {
		s := mustAvro(t, connAvro, 7)
		fd, err := NewFramedDecoder(cfg, FormatAvro, StaticSchemas{7: s})
		if err != nil {
			t.Fatal(err)
		}
		jd, err := NewEventDecoder(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sch := avro.MustParse(connAvro)
		var ev, jev Event
		for i := range 40 {
			v, j := connValue(i)
			payload, err := avro.Marshal(sch, v)
			if err != nil {
				t.Fatal(err)
			}
			if err := fd.Decode(append(AppendFrame(nil, 7), payload...), &ev); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			if err := jd.Decode([]byte(j), &jev); err != nil {
				t.Fatalf("record %d (JSON %s): %v", i, j, err)
			}
			if a, b := eventText(&ev), eventText(&jev); a != b {
				t.Fatalf("record %d:\navro %s\njson %s", i, a, b)
			}
		}
	}
}

// schemaFunc is a SchemaSource of a function.
type schemaFunc func(uint32) (*Schema, error)

func (f schemaFunc) Schema(id uint32) (*Schema, error) { return f(id) }

func TestAvroBadInput(t *testing.T) {
	s := mustAvro(t, connAvro, 7)
	js, _ := CompileSchema(9, SchemaJSON, `{"type":"object"}`, nil)
	static := StaticSchemas{7: s, 9: js}
	fd, _ := NewFramedDecoder(EventConfig{}, FormatAvro, schemaFunc(func(id uint32) (*Schema, error) {
		switch id {
		case 10:
			return nil, fmt.Errorf("schema id 10 has over 1048576 bytes: %w", ErrSchemaTooLarge)
		case 11:
			return nil, fmt.Errorf("schema id 11 does not compile: avro: unknown type: x: %w", ErrBadSchema)
		}
		return static.Schema(id)
	}))
	v, _ := connValue(1)
	payload, err := avro.Marshal(avro.MustParse(connAvro), v)
	if err != nil {
		t.Fatal(err)
	}
	good := append(AppendFrame(nil, 7), payload...)
	var ev Event
	if err := fd.Decode(good, &ev); err != nil {
		t.Fatal(err)
	}
	badUnion := append([]byte(nil), good...)
	// The label is the last field: ["null","string"] with branch 1 (0x02);
	// branch 5 (0x0a) does not exist.
	li := len(good) - len("normal.") - 2
	if badUnion[li] != 0x02 {
		t.Fatalf("layout: byte %d is %#x", li, badUnion[li])
	}
	badUnion[li] = 0x0a
	for _, c := range []struct {
		name string
		b    []byte
		want Reason
	}{
		{"no magic byte", payload, ReasonBadFraming},
		{"short", []byte{0, 0, 0}, ReasonBadFraming},
		{"plain JSON", []byte(`{"a":1}`), ReasonBadFraming},
		{"unknown id", append(AppendFrame(nil, 8), payload...), ReasonUnknownSchema},
		{"schema too large", append(AppendFrame(nil, 10), payload...), ReasonSchemaTooLarge},
		{"schema does not compile", append(AppendFrame(nil, 11), payload...), ReasonBadSchema},
		{"truncated", good[:len(good)-3], ReasonSchemaMismatch},
		{"bytes left over", append(append([]byte(nil), good...), 0, 0), ReasonSchemaMismatch},
		{"bad union branch", badUnion, ReasonSchemaMismatch},
		{"a JSON schema for avro input", append(AppendFrame(nil, 9), `{"a":1}`...), ReasonSchemaMismatch},
		{"empty", nil, ReasonEmptyMessage},
	} {
		err := fd.Decode(c.b, &ev)
		var ce *Error
		if !errors.As(err, &ce) || ce.Reason != c.want {
			t.Errorf("%s: got %v, want reason %s", c.name, err, c.want)
		}
	}
	// A huge block of nulls takes no byte: it is bounded all the same.
	nulls := mustAvro(t, `{"type":"record","name":"N","fields":[{"name":"n","type":{"type":"array","items":"null"}}]}`, 3)
	fd, _ = NewFramedDecoder(EventConfig{}, FormatAvro, StaticSchemas{3: nulls})
	huge := append(AppendFrame(nil, 3), 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0)
	var ce *Error
	if err := fd.Decode(huge, &ev); !errors.As(err, &ce) || ce.Reason != ReasonTooManyFeatures {
		t.Errorf("a block of 2^62 nulls: %v", err)
	}
}

func TestAvroEvolution(t *testing.T) {
	// v2 adds "region" (with a default) and removes "urgent": each record
	// is read with the schema it was written with.
	v1 := mustAvro(t, `{"type":"record","name":"C","fields":[{"name":"a","type":"double"},{"name":"urgent","type":"boolean"},{"name":"label","type":"int"}]}`, 1)
	v2text := `{"type":"record","name":"C","fields":[{"name":"a","type":"double"},{"name":"region","type":"string","default":"eu"},{"name":"label","type":"int"}]}`
	v2 := mustAvro(t, v2text, 2)
	fd, _ := NewFramedDecoder(EventConfig{}, FormatAvro, StaticSchemas{1: v1, 2: v2})
	p1, _ := avro.Marshal(avro.MustParse(`{"type":"record","name":"C","fields":[{"name":"a","type":"double"},{"name":"urgent","type":"boolean"},{"name":"label","type":"int"}]}`),
		map[string]any{"a": 2.5, "urgent": true, "label": 1})
	p2, _ := avro.Marshal(avro.MustParse(v2text), map[string]any{"a": 3.5, "region": "us", "label": -1})
	var ev Event
	if err := fd.Decode(append(AppendFrame(nil, 1), p1...), &ev); err != nil {
		t.Fatal(err)
	}
	if got := eventText(&ev); got != `label="1" key="" a:numeric=4004000000000000 urgent:numeric=3ff0000000000000` {
		t.Errorf("v1: %s", got)
	}
	if err := fd.Decode(append(AppendFrame(nil, 2), p2...), &ev); err != nil {
		t.Fatal(err)
	}
	if got := eventText(&ev); got != `label="-1" key="" a:numeric=400c000000000000 region:categorical="us"` {
		t.Errorf("v2: %s", got)
	}
}

func TestAvroLogicalTypes(t *testing.T) {
	text := `{"type":"record","name":"L","fields":[
	 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
	 {"name":"day","type":{"type":"int","logicalType":"date"}},
	 {"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
	 {"name":"debt","type":{"type":"fixed","name":"D","size":3,"logicalType":"decimal","precision":6,"scale":1}}]}`
	s := mustAvro(t, text, 4)
	fd, _ := NewFramedDecoder(EventConfig{}, FormatAvro, StaticSchemas{4: s})
	// price 123.45 = 12345 (0x3039), debt -1.5 = -15 (0xfffff1).
	payload := []byte{}
	payload = appendZigzagLong(payload, 1700000000000)
	payload = appendZigzagLong(payload, 19000)
	payload = appendZigzagLong(payload, 2)
	payload = append(payload, 0x30, 0x39, 0xff, 0xff, 0xf1)
	var ev Event
	if err := fd.Decode(append(AppendFrame(nil, 4), payload...), &ev); err != nil {
		t.Fatal(err)
	}
	want := []float64{1700000000000, 19000, 123.45, -1.5}
	if len(ev.Fields) != len(want) {
		t.Fatalf("fields: %s", eventText(&ev))
	}
	for i, f := range ev.Fields {
		if f.Num != want[i] {
			t.Errorf("%s = %v, want %v", ev.Name(f), f.Num, want[i])
		}
	}
}

const connProto = `syntax = "proto3";
package test;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
message Conn {
  enum Proto { TCP = 0; UDP = 1; ICMP = 2; }
  string id = 1;
  int64 duration = 2;
  Proto protocol = 3;
  double bytes = 4;
  int32 count = 5;
  bool urgent = 6;
  optional string service = 7;
  repeated string flags = 8;
  repeated double rates = 9;
  map<string, double> hosts = 10;
  Host src = 11;
  string label = 12;
  oneof extra { double score = 13; string note = 14; }
  google.protobuf.Timestamp seen = 15;
  google.protobuf.DoubleValue weight = 16;
  message Host { int32 port = 1; string zone = 2; }
}
message Other { string x = 1; }
`

func TestProtobufEventsAreTheirJSONTwins(t *testing.T) {
	s, err := CompileSchema(5, SchemaProtobuf, connProto, nil)
	if err != nil {
		t.Fatal(err)
	}
	fdesc, err := protoDescriptor(connProto, nil)
	if err != nil {
		t.Fatal(err)
	}
	md := fdesc.Messages().ByName("Conn")
	cfg := EventConfig{KeyField: "id"}
	fd, _ := NewFramedDecoder(cfg, FormatProtobuf, StaticSchemas{5: s})
	jd, _ := NewEventDecoder(cfg)
	var ev, jev Event
	for i := 1; i < 30; i++ {
		m := dynamicpb.NewMessage(md)
		set := func(name string, v protoreflect.Value) { m.Set(md.Fields().ByName(protoreflect.Name(name)), v) }
		set("id", protoreflect.ValueOfString(fmt.Sprintf("c%d", i)))
		set("duration", protoreflect.ValueOfInt64(int64(i*7)))
		set("protocol", protoreflect.ValueOfEnum(protoreflect.EnumNumber(i%3)))
		set("bytes", protoreflect.ValueOfFloat64(float64(i)*1.25))
		set("count", protoreflect.ValueOfInt32(int32(i%11)))
		set("urgent", protoreflect.ValueOfBool(i%2 == 0))
		svc := ""
		if i%3 != 0 {
			set("service", protoreflect.ValueOfString(fmt.Sprintf("svc%d", i%5)))
			svc = fmt.Sprintf(`"service":"svc%d",`, i%5)
		}
		fl := m.Mutable(md.Fields().ByName("flags")).List()
		fl.Append(protoreflect.ValueOfString("SF"))
		fl.Append(protoreflect.ValueOfString(fmt.Sprintf("f%d", i%3)))
		rl := m.Mutable(md.Fields().ByName("rates")).List()
		rl.Append(protoreflect.ValueOfFloat64(0.5))
		rl.Append(protoreflect.ValueOfFloat64(float64(i) / 10))
		hm := m.Mutable(md.Fields().ByName("hosts")).Map()
		hm.Set(protoreflect.ValueOfString("a").MapKey(), protoreflect.ValueOfFloat64(1.5))
		src := m.Mutable(md.Fields().ByName("src")).Message()
		src.Set(src.Descriptor().Fields().ByName("port"), protoreflect.ValueOfInt32(int32(1000+i)))
		src.Set(src.Descriptor().Fields().ByName("zone"), protoreflect.ValueOfString("z1"))
		set("label", protoreflect.ValueOfString("normal."))
		set("score", protoreflect.ValueOfFloat64(0.25))
		ts := m.Mutable(md.Fields().ByName("seen")).Message()
		ts.Set(ts.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(1700000000))
		ts.Set(ts.Descriptor().Fields().ByName("nanos"), protoreflect.ValueOfInt32(500000000))
		wt := m.Mutable(md.Fields().ByName("weight")).Message()
		wt.Set(wt.Descriptor().Fields().ByName("value"), protoreflect.ValueOfFloat64(2))
		payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		protos := []string{"TCP", "UDP", "ICMP"}
		j := fmt.Sprintf(`{"id":"c%d","duration":%d,"protocol":"%s","bytes":%v,"count":%d,"urgent":%v,%s"flags":["SF","f%d"],"rates":[0.5,%v],"hosts":{"a":1.5},"src":{"port":%d,"zone":"z1"},"label":"normal.","score":0.25,"seen":1700000000.5,"weight":2}`,
			i, i*7, protos[i%3], float64(i)*1.25, i%11, i%2 == 0, svc, i%3, float64(i)/10, 1000+i)
		framed := append(AppendFrame(nil, 5), 0) // message index [0]
		if err := fd.Decode(append(framed, payload...), &ev); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if err := jd.Decode([]byte(j), &jev); err != nil {
			t.Fatal(err)
		}
		if a, b := eventText(&ev), eventText(&jev); a != b {
			t.Fatalf("record %d:\nprotobuf %s\njson     %s", i, a, b)
		}
	}
}

func TestProtobufDefaultsAndIndexes(t *testing.T) {
	s, err := CompileSchema(5, SchemaProtobuf, connProto, nil)
	if err != nil {
		t.Fatal(err)
	}
	fd, _ := NewFramedDecoder(EventConfig{LabelField: "count"}, FormatProtobuf, StaticSchemas{5: s})
	var ev Event
	// An empty Conn: proto3 fields at their defaults are there, off the
	// wire; the label count=0 is "0", not missing.
	if err := fd.Decode(append(AppendFrame(nil, 5), 0), &ev); err != nil {
		t.Fatal(err)
	}
	// "" is a missing value, as in every format (TypeString).
	want := `label="0" key="" bytes:numeric=0 duration:numeric=0 protocol:categorical="TCP" urgent:numeric=0`
	if got := eventText(&ev); got != want {
		t.Errorf("defaults:\n got %s\nwant %s", got, want)
	}
	// Message indexes [1] (count 1, index 1, zig-zag): the second message.
	if err := fd.Decode(append(AppendFrame(nil, 5), 2, 2, 0x0a, 1, 'q'), &ev); err != nil {
		t.Fatal(err)
	}
	if got := eventText(&ev); got != `label="" key="" x:categorical="q"` {
		t.Errorf("message [1]: %s", got)
	}
	var ce *Error
	if err := fd.Decode(append(AppendFrame(nil, 5), 2, 8), &ev); !errors.As(err, &ce) || ce.Reason != ReasonSchemaMismatch {
		t.Errorf("message index 4 of 2: %v", err)
	}
	if err := fd.Decode(append(AppendFrame(nil, 5), 0, 0x22, 9, 1), &ev); !errors.As(err, &ce) || ce.Reason != ReasonSchemaMismatch {
		t.Errorf("truncated: %v", err)
	}
}

// TestFramedDecodeNeverPanics mutates valid Avro and Protobuf records
// (bytes flipped, cut, inserted) 20,000 times each: every result is a
// decoded event or an *Error, never a panic or another error.
func TestFramedDecodeNeverPanics(t *testing.T) {
	pb, err := CompileSchema(5, SchemaProtobuf, connProto, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := StaticSchemas{7: mustAvro(t, connAvro, 7), 5: pb}
	v, _ := connValue(3)
	ab, err := src[7].AppendEncoded(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	pbb, err := pb.AppendEncoded(nil, map[string]any{"id": "c1", "duration": json.Number("3"), "flags": []any{"a", "b"},
		"hosts": map[string]any{"x": 1.5}, "src": map[string]any{"port": 3, "zone": "z"}, "label": "l", "seen": "2024-01-01T00:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		f    Format
		good []byte
	}{{FormatAvro, ab}, {FormatProtobuf, pbb}} {
		d, _ := NewFramedDecoder(EventConfig{KeyField: "id"}, c.f, src)
		var ev Event
		if err := d.Decode(c.good, &ev); err != nil {
			t.Fatalf("%s: %v", c.f, err)
		}
		for range 20000 {
			b := append([]byte(nil), c.good...)
			for range 1 + rnd.IntN(4) {
				i := 5 + rnd.IntN(len(b)-5)
				switch rnd.IntN(3) {
				case 0:
					b[i] = byte(rnd.Uint32())
				case 1:
					b = b[:i]
				default:
					b = append(b[:i], append([]byte{byte(rnd.Uint32())}, b[i:]...)...)
				}
				if len(b) <= 5 {
					break
				}
			}
			err := d.Decode(b, &ev)
			var ce *Error
			if err != nil && !errors.As(err, &ce) {
				t.Fatalf("%s: %x: a non-codec error %v", c.f, b, err)
			}
		}
	}
}
