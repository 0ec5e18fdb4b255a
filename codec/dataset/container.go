package dataset

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"

	"github.com/streamlearner/streamlearner/codec"
)

// Binary record files: Avro object container files (the schema in the
// file's header) and length-delimited Protobuf messages (the schema given
// apart). Their records are read as the wire format's payloads, so eval
// decodes them with the decoder the service uses on a topic.

// MaxBlockBytes bounds an object container file's block, compressed and
// decompressed, and a delimited message: a size read from a corrupted or
// forged file must not become an allocation of gigabytes. Writers keep
// blocks far smaller (the Java writer's default sync interval is 64,000
// bytes).
const MaxBlockBytes = 64 << 20

var avroMagic = []byte("Obj\x01")

// IsAvroFile reports whether the file at path is an Avro object container
// file: it starts with the magic bytes "Obj" 1.
func IsAvroFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && bytes.Equal(b[:], avroMagic)
}

// AvroFile is an open object container file.
type AvroFile struct {
	// Schema is the writer schema of the file's header, compiled under the
	// id the caller gave.
	Schema *codec.Schema
	// Codec is the block compression: null, deflate, snappy or zstandard.
	Codec string

	path string
	f    *os.File
	r    *bufio.Reader
	sync [16]byte
	zstd *zstd.Decoder
}

// OpenAvro opens the object container file at path and reads its header.
// The caller closes it.
func OpenAvro(path string, id uint32) (*AvroFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	a, err := openAvro(f, path, id)
	if err != nil {
		f.Close()
		return nil, err
	}
	a.f = f
	return a, nil
}

func openAvro(r io.Reader, path string, id uint32) (*AvroFile, error) {
	a := &AvroFile{path: path, r: bufio.NewReaderSize(r, 1<<16)}
	meta, err := a.header()
	if err != nil {
		return nil, fmt.Errorf("%s: not an Avro object container file (its header: %w)", path, err)
	}
	a.Codec = string(meta["avro.codec"])
	switch a.Codec {
	case "":
		a.Codec = "null"
	case "null", "deflate", "snappy":
	case "zstandard":
		// One decoder for the whole file, its window bounded like a block.
		if a.zstd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxBlockBytes)); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	default:
		return nil, fmt.Errorf("%s: block codec %q is not supported (null, deflate, snappy, zstandard are)", path, a.Codec)
	}
	s, err := codec.CompileSchema(id, codec.SchemaAvro, string(meta["avro.schema"]), nil)
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("%s: the header's schema: %w", path, err)
	}
	a.Schema = s
	return a, nil
}

// Header bounds: a header is a few kilobytes (the schema, the codec, a
// writer's own keys).
const (
	maxHeaderBytes   = 1 << 20
	maxHeaderEntries = 1000
)

// header reads the file header: the magic, the metadata map (string keys,
// bytes values, in blocks as an Avro map), the sync marker. Every count
// and length is checked against the bounds above before anything is
// allocated or looped over, so a forged header costs at most a megabyte.
func (a *AvroFile) header() (map[string][]byte, error) {
	var magic [4]byte
	if _, err := io.ReadFull(a.r, magic[:]); err != nil || !bytes.Equal(magic[:], avroMagic) {
		return nil, errors.New(`it does not start with "Obj" 1`)
	}
	meta := map[string][]byte{}
	total := 0
	for {
		n, err := a.long()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		if n < 0 {
			// A negative count is followed by the block's size in bytes.
			if n = -n; n < 0 {
				return nil, errors.New("a metadata count out of range")
			}
			if _, err := a.long(); err != nil {
				return nil, err
			}
		}
		if n > maxHeaderEntries-int64(len(meta)) {
			return nil, fmt.Errorf("more than %d metadata entries", maxHeaderEntries)
		}
		for range n {
			var kv [2][]byte
			for i := range kv {
				m, err := a.long()
				if err != nil {
					return nil, err
				}
				if m < 0 || m > int64(maxHeaderBytes-total) {
					return nil, fmt.Errorf("metadata of more than %d bytes", maxHeaderBytes)
				}
				total += int(m)
				kv[i] = make([]byte, m)
				if _, err := io.ReadFull(a.r, kv[i]); err != nil {
					return nil, fmt.Errorf("metadata: %w", err)
				}
			}
			meta[string(kv[0])] = kv[1]
		}
	}
	if _, err := io.ReadFull(a.r, a.sync[:]); err != nil {
		return nil, fmt.Errorf("sync marker: %w", err)
	}
	return meta, nil
}

// long reads a zig-zag varint (Avro's int and long).
func (a *AvroFile) long() (int64, error) {
	u, err := binary.ReadUvarint(a.r)
	if errors.Is(err, io.EOF) {
		return 0, io.EOF
	}
	if err != nil {
		return 0, fmt.Errorf("a varint: %w", err)
	}
	return int64(u>>1) ^ -int64(u&1), nil
}

// Close closes the file.
func (a *AvroFile) Close() error {
	if a.zstd != nil {
		a.zstd.Close()
	}
	if a.f != nil {
		return a.f.Close()
	}
	return nil
}

// Each calls fn with each datum of the file and its 1-based number, in
// file order, until fn returns false or an error, or ctx ends. A datum is
// valid only during the call. A block whose size, count, sync marker or
// compression is wrong, or whose data do not divide into its count of
// data of the schema, ends the read with an error naming the block: past
// it nothing in the file can be trusted to start on a record.
func (a *AvroFile) Each(ctx context.Context, lim codec.Limits, fn func(n int, datum []byte) (more bool, err error)) error {
	var raw bytes.Buffer
	var plain []byte
	n := 0
	for block := 1; ; block++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		count, err := a.long()
		if errors.Is(err, io.EOF) {
			return nil // the end of the file, between blocks
		}
		var size int64
		if err == nil {
			size, err = a.long()
		}
		if err != nil {
			return fmt.Errorf("%s: block %d is truncated: %w", a.path, block, noEOF(err))
		}
		if count < 0 || size < 0 || size > MaxBlockBytes || count > MaxBlockBytes {
			return fmt.Errorf("%s: block %d: %d records in %d bytes (corrupted? a block holds at most %d bytes)", a.path, block, count, size, MaxBlockBytes)
		}
		// The buffer grows with the bytes that are there, not with the
		// size the file claims.
		raw.Reset()
		if _, err := io.CopyN(&raw, a.r, size); err != nil {
			return fmt.Errorf("%s: block %d is truncated: %w", a.path, block, noEOF(err))
		}
		var sync [16]byte
		if _, err := io.ReadFull(a.r, sync[:]); err != nil {
			return fmt.Errorf("%s: block %d is truncated: %w", a.path, block, noEOF(err))
		}
		if sync != a.sync {
			return fmt.Errorf("%s: block %d: wrong sync marker (corrupted file)", a.path, block)
		}
		if plain, err = a.decompress(raw.Bytes(), plain); err != nil {
			return fmt.Errorf("%s: block %d (%s): %w", a.path, block, a.Codec, err)
		}
		for at, i := 0, int64(0); i < count; i++ {
			m, err := a.Schema.AvroDatumLen(plain[at:], lim)
			if err != nil {
				return fmt.Errorf("%s: block %d, record %d of %d: %w", a.path, block, i+1, count, err)
			}
			n++
			more, err := fn(n, plain[at:at+m])
			if err != nil || !more {
				return err
			}
			if at += m; i == count-1 && at != len(plain) {
				return fmt.Errorf("%s: block %d: %d bytes left after its %d records (written with another schema?)", a.path, block, len(plain)-at, count)
			}
		}
	}
}

// decompress returns the block's data, in buf when it must be copied.
func (a *AvroFile) decompress(raw, buf []byte) ([]byte, error) {
	switch a.Codec {
	case "deflate":
		zr := flate.NewReader(bytes.NewReader(raw))
		defer zr.Close()
		out := bytes.NewBuffer(buf[:0])
		n, err := io.Copy(out, io.LimitReader(zr, MaxBlockBytes+1))
		if err != nil {
			return nil, err
		}
		if n > MaxBlockBytes {
			return nil, fmt.Errorf("decompresses to more than %d bytes", MaxBlockBytes)
		}
		return out.Bytes(), nil
	case "snappy":
		// The compressed data, then the CRC-32 of the decompressed data.
		if len(raw) < 4 {
			return nil, errors.New("no checksum")
		}
		m, err := snappy.DecodedLen(raw[:len(raw)-4])
		if err != nil {
			return nil, err
		}
		if m > MaxBlockBytes {
			return nil, fmt.Errorf("decompresses to %d bytes, more than %d", m, MaxBlockBytes)
		}
		out, err := snappy.Decode(grow(buf, m), raw[:len(raw)-4])
		if err != nil {
			return nil, err
		}
		if crc32.ChecksumIEEE(out) != binary.BigEndian.Uint32(raw[len(raw)-4:]) {
			return nil, errors.New("checksum mismatch")
		}
		return out, nil
	case "zstandard":
		return a.zstd.DecodeAll(raw, buf[:0])
	}
	return raw, nil
}

// noEOF is io.ErrUnexpectedEOF for io.EOF: a file that ends inside a
// block.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// Delimited calls fn with each message of r, a run of messages each
// preceded by its length as a varint (Protobuf's writeDelimitedTo, Go's
// protodelim), and its 1-based number, until fn returns false or an error,
// or ctx ends; r is gunzipped when it starts with the gzip magic bytes. A
// message is valid only during the call. A length over maxBytes (at most
// MaxBlockBytes), or a file that ends inside a message, is an error: past
// it no message can be found.
func Delimited(ctx context.Context, r io.Reader, maxBytes int, fn func(n int, msg []byte) (more bool, err error)) error {
	br, closeGzip, err := gunzipped(r)
	if err != nil {
		return err
	}
	defer closeGzip()
	maxBytes = min(maxBytes, MaxBlockBytes)
	var buf []byte
	for n := 1; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		size, err := binary.ReadUvarint(br)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("message %d: its length: %w", n, err)
		}
		if size > uint64(maxBytes) {
			return fmt.Errorf("message %d: %d bytes, the limit is %d (is the file length-delimited?)", n, size, maxBytes)
		}
		buf = grow(buf, int(size))
		if _, err := io.ReadFull(br, buf); err != nil {
			return fmt.Errorf("message %d of %d bytes is truncated: %w", n, size, err)
		}
		more, err := fn(n, buf)
		if err != nil || !more {
			return err
		}
	}
}

// DelimitedOf is Delimited over the file at path.
func DelimitedOf(ctx context.Context, path string, maxBytes int, fn func(n int, msg []byte) (more bool, err error)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return Delimited(ctx, bufio.NewReader(f), maxBytes, fn)
}
