package pipeline

import (
	"io"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// lz4Codec is kafka-go's lz4 codec with the frame options Kafka's own
// producer uses: 64 KiB blocks and no content checksum (the batch's CRC
// covers the bytes). pierrec/lz4's defaults — 4 MiB blocks and an xxHash
// of the whole content — cost more than twice as much CPU per prediction
// (BenchmarkCompressBatch) for a flush of a few hundred records.
type lz4Codec struct{}

var lz4Writers sync.Pool

func (lz4Codec) Code() int8   { return 3 }
func (lz4Codec) Name() string { return "lz4" }

// NewReader is never used to write; kafka-go's reads any lz4 frame.
func (lz4Codec) NewReader(r io.Reader) io.ReadCloser { return io.NopCloser(lz4.NewReader(r)) }

func (lz4Codec) NewWriter(w io.Writer) io.WriteCloser {
	z, _ := lz4Writers.Get().(*lz4Writer)
	if z == nil {
		z = &lz4Writer{lz4.NewWriter(w)}
		if err := z.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false)); err != nil {
			panic(err) // the options are constants
		}
	} else {
		z.Reset(w)
	}
	return z
}

// lz4Writer goes back to the pool when closed.
type lz4Writer struct{ *lz4.Writer }

func (w *lz4Writer) Close() error {
	err := w.Writer.Close()
	w.Reset(nil)
	lz4Writers.Put(w)
	return err
}
