package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/internal/offline"
)

// streamBatch is how many events a stream hands a run at a time: enough
// to amortize the hand-off, a few hundred kilobytes. (Records go in the
// batches dataset decodes them in.)
const streamBatch = 1024

// stream is the training file as an offline.Stream: each run reads it
// again, a batch at a time, so that memory does not grow with the file.
// The first reading reports skipped records and the text-field warning;
// the others are silent.
func (c *evalCmd) stream(mc model.Config, labels codec.LabelMap) *offline.Data {
	read := func(ctx context.Context, first bool, fn func(*offline.Data) error) error {
		opts := c.loadOptions(labels, c.Limit)
		opts.Progress = nil // the runs' progress line says it
		if !first {
			opts.Bad = nil
		}
		// Records go on in the batches dataset reads them in, as they
		// are: the storage of their vectors is reused for a later batch
		// once the run is done with this one, as a Stream's batch allows
		// (the model and its learners copy what they keep).
		switch {
		case mc.Events:
			return c.streamEvents(ctx, mc, first, fn)
		case len(mc.Classes) > 0:
			d := &offline.Data{}
			return dataset.EachRawBatch(ctx, c.Data, opts, func(rb *dataset.Batch) error {
				d.X, d.Labels, d.Lines = rb.X, rb.Labels, rb.Lines
				return fn(d)
			})
		}
		d := &offline.Data{}
		dropped, err := dataset.EachBatch(ctx, c.Data, opts, func(rb *dataset.Batch) error {
			d.X, d.Labels, d.Lines = rb.X, d.Labels[:0], rb.Lines
			for _, y := range rb.Y {
				d.Labels = append(d.Labels, offline.LabelToken(y))
			}
			return fn(d)
		})
		if first {
			c.dropped[c.Data] = dropped
		}
		return err
	}
	return offline.FromStream(read, !mc.Events && len(mc.Classes) == 0)
}

// streamEvents is a reading of the training file's events, handed to fn
// streamBatch at a time.
func (c *evalCmd) streamEvents(ctx context.Context, mc model.Config, first bool, fn func(*offline.Data) error) error {
	b := &offline.Data{}
	var buf []byte // events end to end; b.Events slice it at a flush
	var ends []int
	flush := func() error {
		if len(b.Lines) == 0 {
			return nil
		}
		start := 0
		b.Events = b.Events[:0]
		for _, e := range ends {
			b.Events = append(b.Events, buf[start:e:e])
			start = e
		}
		err := fn(b)
		b.Lines, b.Events = b.Lines[:0], b.Events[:0]
		buf, ends = buf[:0], ends[:0]
		return err
	}
	err := c.eachEvent(ctx, c.Data, mc, c.Limit, first, func(line int, rec []byte) error {
		buf = append(buf, rec...)
		ends = append(ends, len(buf))
		b.Lines = append(b.Lines, line)
		if len(b.Lines) == streamBatch {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// eachEvent calls fn with each event of the file at path, in file order,
// with its line (a record's number in a binary file), up to limit (0:
// all): JSON lines, CSV rows as JSON events, or framed records of an Avro
// container file or of length-delimited Protobuf. The bytes are valid
// only during the call. With warn, the first records of the training
// file say whether a field looks like free text, on stderr.
func (c *evalCmd) eachEvent(ctx context.Context, path string, mc model.Config, limit int, warn bool, fn func(line int, rec []byte) error) error {
	warn = warn && path == c.Data
	var dec interface {
		Decode([]byte, *codec.Event) error
	}
	var err error
	if mc.Format.Framed() {
		dec, err = codec.NewFramedDecoder(mc.Event, mc.Format, mc.Schemas)
	} else {
		dec, err = codec.NewEventDecoder(mc.Event)
	}
	if err != nil {
		return err
	}
	var ev codec.Event
	var text textFields
	n := 0
	each := func(line int, b []byte) (bool, error) {
		if err := fn(line, b); err != nil {
			return false, &stopReading{err}
		}
		if n++; warn && n <= 1000 && dec.Decode(b, &ev) == nil {
			text.see(&ev)
		}
		return limit <= 0 || n < limit, nil
	}
	if mc.Format.Framed() {
		err = c.eachFramed(ctx, path, mc, each)
	} else {
		err = dataset.LinesOf(ctx, path, each)
	}
	var stop *stopReading
	if errors.As(err, &stop) {
		return stop.err
	}
	if err != nil {
		return fmt.Errorf("load %s: %w", path, err)
	}
	if w := text.warning(); warn && w != "" {
		fmt.Fprintln(os.Stderr, "streamlearner: warning:", w)
	}
	return nil
}

// stopReading carries the error of a caller that stopped a reading.
type stopReading struct{ err error }

func (s *stopReading) Error() string { return s.err.Error() }
func (s *stopReading) Unwrap() error { return s.err }
