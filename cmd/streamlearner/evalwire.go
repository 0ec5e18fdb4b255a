package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/dataset"
	"github.com/streamlearner/streamlearner/model"
	"github.com/streamlearner/streamlearner/offline"
)

// Binary record files in eval: an Avro object container file carries its
// writer schema in its header; length-delimited Protobuf messages take
// theirs from --schema. Each record is kept as the wire format would
// carry it on a topic (the header naming the file's schema), so eval
// decodes it with the service's own decoder: a record gives the same
// features in a file as on a topic.

// The schema ids eval gives the files' schemas; nothing is registered.
const (
	trainSchemaID = 1
	testSchemaID  = 2
)

// dataFormat decides how the data files are read: --input, or for auto
// the training file's first bytes (the container file's magic, a JSON
// object without "features"); it sets mc's input kind and format.
func (c *evalCmd) dataFormat(ctx context.Context, mc *model.Config) error {
	input := c.Input
	if input == "auto" && dataset.IsAvroFile(c.Data) {
		input = "avro"
	}
	if c.Schema != "" && input != "protobuf" {
		return errors.New("--schema is the .proto of length-delimited Protobuf data: it needs --input protobuf")
	}
	switch input {
	case "avro":
		for _, path := range []string{c.Data, c.Test} {
			if path != "" && !dataset.IsAvroFile(path) {
				return fmt.Errorf("--input avro: %s is not an Avro object container file (it does not start with \"Obj\" 1)", path)
			}
		}
	case "protobuf":
		if c.Schema == "" {
			return errors.New("--input protobuf: eval reads length-delimited messages, whose type --schema FILE (a .proto) gives")
		}
		text, err := os.ReadFile(c.Schema)
		if err != nil {
			return fmt.Errorf("--schema: %w", err)
		}
		s, err := codec.CompileSchema(trainSchemaID, codec.SchemaProtobuf, string(text), nil)
		if err != nil {
			return fmt.Errorf("--schema %s: %w", c.Schema, err)
		}
		mc.Schemas = codec.StaticSchemas{trainSchemaID: s}
	case "json-schema":
		// A file of JSON Schema records is JSON: the schema is not needed
		// to read it (nor checked, as on a topic).
		mc.Events = true
		return nil
	default:
		var err error
		mc.Events, err = isEvents(ctx, input, c.Data)
		return err
	}
	f, _ := wireFormat(input)
	mc.Events, mc.Format = true, f
	if mc.Schemas == nil {
		mc.Schemas = codec.StaticSchemas{} // filled as the files are opened
	}
	return nil
}

// loadFramed reads an Avro container file or a file of length-delimited
// Protobuf messages into framed records; a record's line is its number in
// the file.
func (c *evalCmd) loadFramed(ctx context.Context, path string, mc model.Config, limit int) (*offline.Data, error) {
	d := &offline.Data{Events: [][]byte{}}
	schemas := mc.Schemas.(codec.StaticSchemas)
	dec, err := codec.NewFramedDecoder(mc.Event, mc.Format, schemas)
	if err != nil {
		return nil, err
	}
	var ev codec.Event
	var text textFields
	id := uint32(trainSchemaID)
	add := func(n int, payload []byte, index ...byte) (bool, error) {
		rec := make([]byte, 0, 5+len(index)+len(payload))
		rec = append(append(codec.AppendFrame(rec, id), index...), payload...)
		d.Events = append(d.Events, rec)
		d.Lines = append(d.Lines, n)
		if len(d.Events)%(1<<14) == 0 {
			c.loading(len(d.Events))
		}
		if len(d.Events) <= 1000 && dec.Decode(rec, &ev) == nil {
			text.see(&ev)
		}
		return limit <= 0 || len(d.Events) < limit, nil
	}
	if mc.Format == codec.FormatAvro {
		if path != c.Data {
			id = testSchemaID
		}
		a, err := dataset.OpenAvro(path, id)
		if err != nil {
			return nil, err
		}
		defer a.Close()
		schemas[id] = a.Schema
		err = a.Each(ctx, mc.Event.Limits, func(n int, datum []byte) (bool, error) { return add(n, datum) })
		if err != nil {
			return nil, fmt.Errorf("load: %w", err) // it names the file
		}
	} else {
		// The wire format's message index [0], in its short form: the
		// file's first message type.
		err := dataset.DelimitedOf(ctx, path, mc.Event.Limits.WithDefaults().MaxBytes, func(n int, msg []byte) (bool, error) { return add(n, msg, 0) })
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", path, err)
		}
	}
	if w := text.warning(); w != "" && path == c.Data {
		fmt.Fprintln(os.Stderr, "streamlearner: warning:", w)
	}
	if len(d.Events) == 0 {
		return nil, fmt.Errorf("load %s: no records", filepath.Base(path))
	}
	return d, nil
}
