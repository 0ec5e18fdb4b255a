package pipeline

import (
	"encoding/binary"
	"io"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// lz4Codec writes lz4 frames as Kafka's producer does: independent 64
// KiB blocks, no block or content checksum (the batch's CRC covers the
// bytes). It compresses the blocks itself (lz4.Compressor, whose hash
// table is reused) rather than through pierrec's frame Writer, whose
// defaults — 4 MiB blocks and an xxHash of the whole content — cost
// 230 ns a prediction over an uncompressed batch, and whose buffering
// copies each block once more (BenchmarkCompressBatch).
type lz4Codec struct{}

// lz4Header is the frame's magic number, its descriptor (FLG: version 1,
// independent blocks; BD: 64 KiB blocks) and the descriptor's checksum
// (the second byte of xxh32 over FLG and BD), fixed for these settings.
var lz4Header = []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82}

const lz4Block = 64 << 10

var lz4Compressors = sync.Pool{New: func() any { return new(lz4.Compressor) }}

func (lz4Codec) Code() int8   { return 3 }
func (lz4Codec) Name() string { return "lz4" }

// NewReader reads any lz4 frame (the service only writes them).
func (lz4Codec) NewReader(r io.Reader) io.ReadCloser { return io.NopCloser(lz4.NewReader(r)) }

// NewWriter buffers what is written and writes it as one frame on Close.
func (c lz4Codec) NewWriter(w io.Writer) io.WriteCloser { return &lz4Writer{w: w} }

type lz4Writer struct {
	w   io.Writer
	buf []byte
}

func (z *lz4Writer) Write(p []byte) (int, error) {
	z.buf = append(z.buf, p...)
	return len(p), nil
}

func (z *lz4Writer) Close() error {
	_, err := z.w.Write(lz4Codec{}.appendCompressed(nil, z.buf))
	return err
}

// appendCompressed appends src to dst as one lz4 frame.
func (lz4Codec) appendCompressed(dst, src []byte) []byte {
	c := lz4Compressors.Get().(*lz4.Compressor)
	defer lz4Compressors.Put(c)
	dst = append(dst, lz4Header...)
	for len(src) > 0 {
		block := src[:min(len(src), lz4Block)]
		src = src[len(block):]
		at := len(dst)
		dst = append(dst, make([]byte, 4+lz4.CompressBlockBound(len(block)))...)
		n, err := c.CompressBlock(block, dst[at+4:])
		if err != nil || n == 0 || n >= len(block) {
			// Incompressible: the block as it is, its size's high bit set.
			dst = append(dst[:at+4], block...)
			binary.LittleEndian.PutUint32(dst[at:], uint32(len(block))|1<<31)
			continue
		}
		dst = dst[:at+4+n]
		binary.LittleEndian.PutUint32(dst[at:], uint32(n))
	}
	return binary.LittleEndian.AppendUint32(dst, 0) // end mark
}
