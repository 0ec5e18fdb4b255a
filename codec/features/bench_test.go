package features

import (
	"testing"

	"github.com/streamlearner/streamlearner/codec"
)

// BenchmarkEventAdult is the cost of one named-field record from decoding
// to the hashed vector: an Adult record (14 fields, 8 categorical) with the
// default 2^18 space, with and without the online scaler. The target is
// ≤ 1 µs and no allocation per record.
func BenchmarkEventAdult(b *testing.B) {
	d, err := codec.NewEventDecoder(codec.EventConfig{LabelField: "income", KeyField: "id"})
	if err != nil {
		b.Fatal(err)
	}
	in := []byte(adultLine)
	for _, scale := range []Scale{ScaleNone, ScaleOnline} {
		b.Run("scale="+scale.String(), func(b *testing.B) {
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
	b.Run("decode-only", func(b *testing.B) {
		var ev codec.Event
		b.ReportAllocs()
		for b.Loop() {
			if err := d.Decode(in, &ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}
