package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/model"
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
		// Each file's writer schema, under an id of its own, before any
		// run reads a record.
		schemas := codec.StaticSchemas{}
		for id, path := range map[uint32]string{trainSchemaID: c.Data, testSchemaID: c.Test} {
			if path == "" {
				continue
			}
			if !dataset.IsAvroFile(path) {
				return fmt.Errorf("--input avro: %s is not an Avro object container file (it does not start with \"Obj\" 1)", path)
			}
			a, err := dataset.OpenAvro(path, id)
			if err != nil {
				return err
			}
			a.Close()
			schemas[id] = a.Schema
		}
		mc.Schemas = schemas
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
	return nil
}

// eachFramed calls fn with each record of an Avro container file or a
// file of length-delimited Protobuf messages, framed as the wire format
// carries it (the header naming the file's schema), and its number in
// the file, which stands for its line.
func (c *evalCmd) eachFramed(ctx context.Context, path string, mc model.Config, fn func(n int, rec []byte) (bool, error)) error {
	var rec []byte
	frame := func(id uint32, n int, payload []byte, index ...byte) (bool, error) {
		rec = append(append(codec.AppendFrame(rec[:0], id), index...), payload...)
		return fn(n, rec)
	}
	if mc.Format == codec.FormatAvro {
		id := uint32(trainSchemaID)
		if path != c.Data {
			id = testSchemaID
		}
		a, err := dataset.OpenAvro(path, id)
		if err != nil {
			return err
		}
		defer a.Close()
		return a.Each(ctx, mc.Event.Limits, func(n int, datum []byte) (bool, error) { return frame(id, n, datum) })
	}
	// The wire format's message index [0], in its short form: the file's
	// first message type.
	err := dataset.DelimitedOf(ctx, path, mc.Event.Limits.WithDefaults().MaxBytes, func(n int, msg []byte) (bool, error) {
		return frame(trainSchemaID, n, msg, 0)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}
