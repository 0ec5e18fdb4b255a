package codec

import (
	"encoding/json"
	"strconv"
	"testing"
)

// An a9a record: label ±1 and 14 binary features among indices 1..123.
var (
	a9aJSON   = []byte(`{"label":-1,"features":{"3":1,"11":1,"14":1,"19":1,"39":1,"42":1,"55":1,"64":1,"67":1,"73":1,"75":1,"76":1,"80":1,"83":1}}`)
	a9aLIBSVM = []byte("-1 3:1 11:1 14:1 19:1 39:1 42:1 55:1 64:1 67:1 73:1 75:1 76:1 80:1 83:1\n")
)

// A dense 784-value record shaped like a scaled MNIST digit: about one pixel
// in five lit, intensities k/255 written in full (17 significant digits, as
// a producer in most languages prints a float64), the rest zero.
var dense784JSON, dense784LIBSVM = dense784()

func dense784() (js, svm []byte) {
	js = append(js, `{"label":1,"features":[`...)
	svm = append(svm, '1')
	for i := range 784 {
		v := 0.0
		if row, col := i/28, i%28; row >= 6 && row < 22 && col >= 10 && col < 20 {
			v = float64((i*37)%255+1) / 255
		}
		if i > 0 {
			js = append(js, ',')
		}
		js = strconv.AppendFloat(js, v, 'g', -1, 64)
		svm = append(svm, ' ')
		svm = strconv.AppendUint(svm, uint64(i+1), 10)
		svm = append(svm, ':')
		svm = strconv.AppendFloat(svm, v, 'g', -1, 64)
	}
	js = append(js, "]}"...)
	return js, append(svm, '\n')
}

func benchDecode(b *testing.B, decode func([]byte, Limits) (Example, error), in []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := decode(in, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeJSON(b *testing.B) {
	b.Run("a9a", func(b *testing.B) { benchDecode(b, DecodeJSON, a9aJSON) })
	b.Run("dense784", func(b *testing.B) { benchDecode(b, DecodeJSON, dense784JSON) })
}

func BenchmarkDecodeLIBSVM(b *testing.B) {
	b.Run("a9a", func(b *testing.B) { benchDecode(b, DecodeLIBSVM, a9aLIBSVM) })
	b.Run("dense784", func(b *testing.B) { benchDecode(b, DecodeLIBSVM, dense784LIBSVM) })
}

func BenchmarkAppendJSON(b *testing.B) {
	ex, err := DecodeJSON(a9aJSON, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	buf := make([]byte, 0, 512)
	for b.Loop() {
		buf = AppendJSON(buf[:0], ex)
	}
}

// BenchmarkAppendPrediction is the encoding of one prediction record, the
// service's per-record output; beside it, json.Marshal of the same value.
func BenchmarkAppendPrediction(b *testing.B) {
	yes := true
	p := Prediction{Topic: "in", Partition: 3, Offset: 1234567, Key: "", Predicted: -1, Margin: -0.4123456789012345, Label: 1, Mistake: &yes, Learner: "rbp:budget=100,seed=1", Support: 100, ModelSeq: 4321}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			buf, _ = AppendPrediction(buf[:0], &p)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(&p)
		}
	})
}
