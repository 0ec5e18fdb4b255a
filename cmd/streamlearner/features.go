package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/codec/schemareg"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners/selection"
)

// fieldFlags say how named-field events are read (shared by the commands
// that take events).
type fieldFlags struct {
	LabelField  string   `default:"label" help:"Field holding the label (events: JSON objects of named fields)."`
	KeyField    string   `placeholder:"FIELD" help:"Field holding the record's id, carried into predictions and not a feature (default: none)."`
	IgnoreField []string `placeholder:"FIELD" help:"Field that is not a feature, repeatable."`
	Features    string   `placeholder:"FIELD:KIND,..." help:"Schema: field kinds numeric, categorical, text or ignore (default: inferred; numbers numeric, strings categorical, booleans 0/1, arrays of strings bags of tokens, objects flattened with '.')."`
	HashBits    int      `default:"18" help:"Features are hashed (xxHash64) into 2^N indices."`
	NormText    bool     `name:"normalize-text" help:"Divide each text field's term counts by their Euclidean norm."`
}

// eventOnly names the flags given that only events use (--label-field
// and --hash-bits other than their defaults, --key-field, --ignore-field,
// --features, --normalize-text, --scale online): with records they would
// be ignored without a word.
func (f fieldFlags) eventOnly(scale string) []string {
	var set []string
	for _, fl := range []struct {
		name string
		on   bool
	}{{"--label-field " + f.LabelField, f.LabelField != "" && f.LabelField != "label"}, {"--hash-bits", f.HashBits != 0 && f.HashBits != 18},
		{"--key-field", f.KeyField != ""}, {"--ignore-field", len(f.IgnoreField) > 0}, {"--features", f.Features != ""},
		{"--normalize-text", f.NormText}, {"--scale " + scale, scale != "" && scale != "none"}} {
		if fl.on {
			set = append(set, fl.name)
		}
	}
	return set
}

func (f fieldFlags) eventConfig() (codec.EventConfig, error) {
	schema, err := codec.ParseSchema(f.Features)
	if err != nil {
		return codec.EventConfig{}, fmt.Errorf("--features: %w", err)
	}
	return codec.EventConfig{LabelField: f.LabelField, KeyField: f.KeyField, Ignore: f.IgnoreField, Schema: schema}, nil
}

func (f fieldFlags) featureConfig(scale string) (features.Config, error) {
	sc, err := features.ParseScale(scale)
	if err != nil {
		return features.Config{}, fmt.Errorf("--scale: %w", err)
	}
	cfg := features.Config{HashBits: f.HashBits, NormalizeText: f.NormText, Scale: sc}
	return cfg, cfg.Validate()
}

// modelFlags choose the input kind, scaling and classes of the commands
// that run partition models.
type modelFlags struct {
	Input      string `default:"auto" enum:"auto,records,events,avro,protobuf,json-schema" help:"Input kind: records (LIBSVM, {\"label\",\"features\"} JSON), events (JSON objects of named fields), avro, protobuf or json-schema (events in the Confluent wire format, schemas from --schema-registry), or auto (events when the first record is a JSON object without a \"features\" key; with --schema-registry, the wire format when it starts with its magic byte; eval: Avro for an object container file). eval reads Avro from object container files and Protobuf from length-delimited messages (--schema)."`
	Scale      string `default:"none" enum:"none,online" help:"Events: scale numeric fields online (running mean and variance of the records before each one)."`
	Classes    string `placeholder:"auto|A,B,..." help:"Many-class one-vs-rest: auto discovers classes online, or list them (default: binary, see --positive)."`
	MaxClasses int    `default:"100" help:"Most classes --classes auto discovers; a record with one more class is refused (too_many_classes)."`
}

// modelConfig is the model template the flags describe (learner, kernel
// and seed are set by the caller).
func (f modelFlags) modelConfig(ff fieldFlags, labels codec.LabelMap) (model.Config, error) {
	ec, err := ff.eventConfig()
	if err != nil {
		return model.Config{}, err
	}
	fc, err := ff.featureConfig(f.Scale)
	if err != nil {
		return model.Config{}, err
	}
	mc := model.Config{Event: ec, Features: fc, Labels: labels, MaxClasses: f.MaxClasses, Events: f.Input == "events"}
	if f.Classes != "" {
		if len(labels.Positive) > 0 {
			return model.Config{}, errors.New("--classes and --positive exclude each other: many classes or a binary mapping")
		}
		if f.Classes == model.Auto {
			mc.Classes = []string{model.Auto}
		} else if mc.Classes, err = codec.ParseLabelList(f.Classes); err != nil {
			return model.Config{}, fmt.Errorf("--classes: %w", err)
		}
	}
	return mc, nil
}

// selectFlags choose a champion among the learners (eval and replay;
// run's flags have the same names).
type selectFlags struct {
	Select         string   `placeholder:"window=N,margin=M|default" help:"Play the champion rule over the learners and challengers: the emitted prediction is the learner's with the fewest mistakes over the last window labeled records, replaced only when a challenger's rate is lower by more than margin ('default': window=2000,margin=0.01). Reports add a select(...) row beside every learner alone."`
	Challenger     []string `sep:"none" placeholder:"SPEC[@KERNEL]" help:"A further learner for --select, repeatable, on its own kernel after @ (e.g. rbp:budget=100@rbf:gamma=0.5; default: --kernel)."`
	SelectDetector string   `placeholder:"SPEC" help:"With --select: a drift detector on the champion's mistakes whose alarm empties the window and re-selects early: adwin[:delta=D], ddm, page-hinkley[:lambda=L,delta=D]."`
}

// selection is what the flags ask for: nil without --select.
func (f selectFlags) selection() (*selection.Config, []model.Candidate, error) {
	if f.Select == "" {
		if len(f.Challenger) > 0 || f.SelectDetector != "" {
			return nil, nil, errors.New("--challenger and --select-detector need --select (e.g. --select default)")
		}
		return nil, nil, nil
	}
	var sc selection.Config
	if f.Select != "default" {
		var err error
		if sc, err = selection.Parse(f.Select); err != nil {
			return nil, nil, fmt.Errorf("--select: %w", err)
		}
	}
	sc.Detector = f.SelectDetector
	if _, err := selection.New(sc, 1); err != nil {
		return nil, nil, fmt.Errorf("--select-detector: %w", err)
	}
	var cands []model.Candidate
	for _, s := range f.Challenger {
		c, err := model.ParseCandidate(s)
		if err != nil {
			return nil, nil, fmt.Errorf("--challenger: %w", err)
		}
		cands = append(cands, c)
	}
	return &sc, cands, nil
}

// isEvents decides --input auto by the first record of the file.
func isEvents(ctx context.Context, input, path string) (bool, error) {
	if input != "auto" {
		return input == "events", nil
	}
	events := false
	err := dataset.LinesOf(ctx, path, func(_ int, b []byte) (bool, error) {
		if b[0] == '#' {
			return true, nil
		}
		_, err := codec.Decode(b, codec.Limits{AllowEmpty: true, MaxBytes: 16 << 20})
		var ce *codec.Error
		events = errors.As(err, &ce) && ce.Reason == codec.ReasonMissingFeatures
		return false, nil
	})
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return events, nil
}

type featuresCmd struct {
	fieldFlags `embed:""`
	Data       string `required:"" type:"existingfile" placeholder:"FILE" help:"JSON lines of named-field events, gzip allowed."`
	Show       int    `default:"3" placeholder:"N" help:"Records whose fields are listed one by one."`
	Limit      int    `placeholder:"N" help:"Read only the first N records for the collision count (0: all)."`
}

// Run lists how the first records map (field, value, index, feature
// value) and counts, over the file, the feature names that share an index.
func (c *featuresCmd) Run(ctx context.Context, out io.Writer) error {
	ecfg, err := c.eventConfig()
	if err != nil {
		return err
	}
	fcfg, err := c.featureConfig("none")
	if err != nil {
		return err
	}
	fcfg.AllowEmpty = true
	dec, err := codec.NewEventDecoder(ecfg)
	if err != nil {
		return err
	}
	fz, err := features.New(fcfg)
	if err != nil {
		return err
	}
	var ev codec.Event
	names := map[string]uint32{} // distinct feature names → index
	records, fields, labeled := 0, 0, 0
	seen := map[string]int{} // field → records that have it
	var text textFields
	err = dataset.LinesOf(ctx, c.Data, func(line int, b []byte) (bool, error) {
		if err := dec.Decode(b, &ev); err != nil {
			return false, fmt.Errorf("%s line %d: %w", c.Data, line, err)
		}
		x, _ := fz.Vector(&ev)
		records++
		fields += len(ev.Fields)
		if ev.Label() != nil {
			labeled++
		}
		if records <= censusRecords {
			for _, fl := range ev.Fields {
				seen[string(ev.Name(fl))]++
			}
		}
		text.see(&ev)
		for _, fl := range ev.Fields {
			name, text := ev.Name(fl), ev.Text(fl)
			key := features.Name(name) // education-num and education_num are one feature
			if fl.Kind != codec.FieldNumeric {
				key += "=" + string(text)
			}
			if fl.Kind == codec.FieldText {
				key = string(name) + " (text)" // tokens are listed below
			}
			if _, ok := names[key]; !ok && fl.Kind != codec.FieldText {
				names[key] = features.Index(name, text, fl.Kind != codec.FieldNumeric, fz.Config().HashBits)
			}
		}
		if records <= c.Show {
			showRecord(out, &ev, x, fz)
		}
		return c.Limit <= 0 || records < c.Limit, nil
	})
	if err != nil {
		return err
	}
	byIndex := map[uint32]int{}
	for _, i := range names {
		byIndex[i]++
	}
	shared, sharedIdx := 0, 0
	for _, n := range byIndex {
		if n > 1 {
			shared += n
			sharedIdx++
		}
	}
	fmt.Fprintf(out, "%d records, %d fields; %d distinct features (field or field=value, text tokens not counted) on %d of 2^%d indices; collisions: %d features share %d indices\n",
		records, fields, len(names), len(byIndex), fz.Config().HashBits, shared, sharedIdx)
	if w := text.warning(); w != "" {
		fmt.Fprintln(out, w)
	}
	if records > 0 && labeled == 0 {
		// The label is then read as one more feature, and a model would
		// have nothing to learn.
		fmt.Fprintf(out, "warning: no record has the label field %q: every field is read as a feature, the label too. Fields (records that have them): %s; set --label-field to the field that holds the label\n",
			c.LabelField, counted(seen))
	}
	return nil
}

// textFields finds categorical fields that look like free text: most of
// their values hold several words. As a category each distinct sentence is
// one feature that never comes back; as text (--features NAME:text) its
// words are features that do.
type textFields struct {
	seen, wordy map[string]int
}

// see counts an event's categorical values, and those of three words or
// more.
func (t *textFields) see(ev *codec.Event) {
	if t.seen == nil {
		t.seen, t.wordy = map[string]int{}, map[string]int{}
	}
	for _, fl := range ev.Fields {
		if fl.Kind != codec.FieldCategorical {
			continue
		}
		name := string(ev.Name(fl))
		t.seen[name]++
		if len(bytes.Fields(ev.Text(fl))) >= 3 {
			t.wordy[name]++
		}
	}
}

// warning names the fields whose values are mostly several words, with
// what to do; "" when there are none.
func (t *textFields) warning() string {
	var names []string
	for name, n := range t.wordy {
		if 2*n > t.seen[name] && t.seen[name] >= 5 {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	var kinds []string
	for _, n := range names {
		kinds = append(kinds, n+":text")
	}
	return fmt.Sprintf("fields that look like free text (most values several words), read as categories: %s; to learn from their words, pass --features %s",
		strings.Join(names, ", "), strings.Join(kinds, ","))
}

func showRecord(out io.Writer, ev *codec.Event, x interface{ Len() int }, fz *features.Featurizer) {
	label, key := "none", "none"
	if l := ev.Label(); l != nil {
		label = string(l)
	}
	if k := ev.Key(); k != nil {
		key = string(k)
	}
	fmt.Fprintf(out, "record key %s, label %s: %d fields → %d features, %d in collisions\n", key, label, len(ev.Fields), x.Len(), fz.Collisions())
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  field\tkind\tvalue\tindex\tx")
	bits := fz.Config().HashBits
	for _, fl := range ev.Fields {
		name, text := ev.Name(fl), ev.Text(fl)
		switch fl.Kind {
		case codec.FieldNumeric:
			fmt.Fprintf(tw, "  %s\tnumeric\t%s\t%d\t%s\n", name, strconv.FormatFloat(fl.Num, 'g', -1, 64),
				features.Index(name, nil, false, bits), strconv.FormatFloat(fl.Num, 'g', -1, 64))
		case codec.FieldCategorical:
			fmt.Fprintf(tw, "  %s\tcategorical\t%s\t%d\t1\n", name, text, features.Index(name, text, true, bits))
		case codec.FieldText:
			toks := features.Tokens(text)
			slices.Sort(toks)
			for _, t := range slices.Compact(slices.Clone(toks)) {
				n := 0
				for _, u := range toks {
					if u == t {
						n++
					}
				}
				fmt.Fprintf(tw, "  %s\ttext token\t%s\t%d\t%d\n", name, t, features.Index(name, []byte(t), true, bits), n)
			}
		}
	}
	tw.Flush()
}

// registryFlags reach a Schema Registry, for records in the wire format
// (Avro, Protobuf, JSON Schema). They are shared flags: one environment
// variable each, STREAMLEARNER_SCHEMA_REGISTRY and
// STREAMLEARNER_SCHEMA_REGISTRY_USERNAME / _PASSWORD. https URLs use the
// --tls-* files.
type registryFlags struct {
	SchemaRegistry         string        `placeholder:"URL" help:"Schema Registry base URL (several: comma-separated), for records in the Confluent wire format (Avro, Protobuf, JSON Schema)."`
	SchemaRegistryUsername string        `placeholder:"USER" help:"Schema Registry basic-auth user."`
	SchemaRegistryPassword string        `placeholder:"PASSWORD" help:"Schema Registry basic-auth password (prefer the environment variable)."`
	SchemaMaxBytes         int           `default:"1048576" placeholder:"BYTES" help:"Largest schema taken from the registry, with the schemas it references (default 1 MiB, the registry's own default); the records of a larger one are dead-lettered (schema_too_large) and the partition goes on."`
	SchemaCacheMaxBytes    int64         `default:"268435456" placeholder:"BYTES" help:"Memory the compiled schemas kept may take (default 256 MiB; estimated from their text: a compiled Protobuf schema keeps up to 64 times it, Avro 16); the least recently used are dropped. It must hold two schemas of --schema-max-bytes."`
	ValidateJSONSchema     bool          `help:"Validate each JSON Schema payload against its schema, and dead-letter one that does not follow it (schema_mismatch). Off by default, as Confluent's deserializer: payloads are only read."`
	SchemaNegativeTTL      time.Duration `default:"5s" placeholder:"DURATION" help:"How long the registry's 404 for a schema id is remembered: for 5 s by default, that id's records are dead-lettered (unknown_schema) without asking again; then the registry is asked anew. An answer that cannot be used (an empty schema) is never remembered: the partition waits as for a registry that is down."`
}

// client is the registry the flags name, nil without --schema-registry.
func (f registryFlags) client(conn kafkaconn.Config) (*schemareg.Client, error) {
	if f.SchemaRegistry == "" {
		return nil, nil
	}
	if f.SchemaNegativeTTL <= 0 || f.SchemaMaxBytes <= 0 || f.SchemaCacheMaxBytes <= 0 {
		return nil, errors.New("--schema-negative-ttl, --schema-max-bytes and --schema-cache-max-bytes must be positive")
	}
	if least := schemareg.MinCacheBytes(f.SchemaMaxBytes, f.ValidateJSONSchema); f.SchemaCacheMaxBytes < least {
		return nil, fmt.Errorf("--schema-cache-max-bytes %d cannot hold two schemas of --schema-max-bytes %d (compiled, a Protobuf schema keeps up to 64 times its text, a JSON Schema validated 96): raise it to %d or lower --schema-max-bytes",
			f.SchemaCacheMaxBytes, f.SchemaMaxBytes, least)
	}
	cfg := schemareg.Config{URL: f.SchemaRegistry, Username: f.SchemaRegistryUsername, Password: f.SchemaRegistryPassword,
		NegativeTTL: f.SchemaNegativeTTL, MaxSchemaBytes: f.SchemaMaxBytes, CacheMaxBytes: f.SchemaCacheMaxBytes, ValidateJSON: f.ValidateJSONSchema}
	if strings.Contains(f.SchemaRegistry, "https://") {
		t, err := conn.TLSConfig()
		if err != nil {
			return nil, fmt.Errorf("--schema-registry: %w", err)
		}
		cfg.TLS = t
	}
	c, err := schemareg.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("--schema-registry: %w", err)
	}
	return c, nil
}

// wireFormat is the codec format of an --input value, and whether it is
// one of the wire formats.
func wireFormat(input string) (codec.Format, bool) {
	switch input {
	case "avro", "protobuf", "json-schema":
		f, err := codec.ParseFormat(input)
		return f, err == nil
	}
	return codec.FormatJSON, false
}

// applyFormat sets the model's format from --input and the registry; a
// wire format without a registry is refused.
func applyFormat(mc *model.Config, input string, reg *schemareg.Client) error {
	f, framed := wireFormat(input)
	if !framed {
		return nil
	}
	if reg == nil {
		return fmt.Errorf("--input %s: records in the wire format need --schema-registry URL", input)
	}
	mc.Events, mc.Format, mc.Schemas = true, f, reg
	return nil
}
