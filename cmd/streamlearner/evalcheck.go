package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/internal/offline"
)

// censusRecords is how many records of a file a census reads to name
// what the file holds when eval finds nothing to learn.
const censusRecords = 10000

// census is what the first records of a data file hold: the events'
// field names, and the labels (of records, or of the label field), each
// with the records that have it.
type census struct {
	records int
	fields  map[string]int
	labels  map[string]int
	indices map[uint32]int // records: feature index → its nonzero entries
	entries int            // records: nonzero entries in all
}

// nothingToLearn is eval's error for a training stream on which the
// results would mean nothing: no record carried a label, or (with
// --positive) every label fell on one side. A mistake rate of 0 % there is
// not a result but a misread stream, so the run fails naming what the
// file holds. nil when there is something to learn or the run was
// stopped before the end.
func (c *evalCmd) nothingToLearn(ctx context.Context, mc model.Config, labels codec.LabelMap, results []offline.Result) error {
	if len(results) == 0 || results[0].Interrupted || results[0].Examples == 0 {
		return nil
	}
	r := results[0]
	oneSided := len(mc.Classes) == 0 && len(labels.Positive) > 0 && (r.Positives == 0 || uint64(r.Positives) == r.Labeled)
	if r.Labeled > 0 && !oneSided {
		return nil
	}
	cs, err := c.census(ctx, c.Data, mc)
	if err != nil {
		return fmt.Errorf("nothing to learn in %s, and reading it again failed: %w", c.Data, err)
	}
	if r.Labeled == 0 && mc.Events {
		return fmt.Errorf("no record of %s has the label field %q: nothing to learn or score. Fields seen in its first %d records: %s; set --label-field to the field that holds the label",
			c.Data, c.LabelField, cs.records, counted(cs.fields))
	}
	if r.Labeled == 0 {
		return fmt.Errorf("no record of %s has a label: nothing to learn or score", c.Data)
	}
	side := "none is"
	if r.Positives > 0 {
		side = "every one is"
	}
	return fmt.Errorf("of the %d labeled records of %s, %s in --positive (%s): one class only, nothing to learn or score. Labels seen in its first %d records: %s",
		r.Labeled, c.Data, side, strings.Join(labels.Positive, ","), cs.records, counted(cs.labels))
}

// census reads the first censusRecords records of a data file.
func (c *evalCmd) census(ctx context.Context, path string, mc model.Config) (census, error) {
	cs := census{fields: map[string]int{}, labels: map[string]int{}, indices: map[uint32]int{}}
	if !mc.Events {
		raw, err := dataset.LoadRaw(ctx, path, dataset.Options{Limit: censusRecords, MaxBad: censusRecords})
		if err != nil {
			return cs, err
		}
		cs.records = len(raw.Labels)
		for i, l := range raw.Labels {
			cs.labels[l]++
			for _, j := range raw.X[i].Idx {
				cs.indices[j]++
			}
			cs.entries += raw.X[i].Len()
		}
		return cs, nil
	}
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
		return cs, err
	}
	var ev codec.Event
	err = c.eachEvent(ctx, path, mc, censusRecords, false, func(_ int, b []byte) error {
		if dec.Decode(b, &ev) != nil {
			return nil // a bad record names no field
		}
		cs.records++
		for _, fl := range ev.Fields {
			cs.fields[string(ev.Name(fl))]++
		}
		if l := ev.Label(); l != nil {
			cs.labels[string(l)]++
		}
		return nil
	})
	return cs, err
}

// counted lists names with their counts, the most frequent first, the
// first 30 of them.
func counted(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	names := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b))
	})
	var parts []string
	for _, n := range names[:min(len(names), 30)] {
		parts = append(parts, fmt.Sprintf("%s (%d)", n, m[n]))
	}
	if len(names) > 30 {
		parts = append(parts, fmt.Sprintf("and %d more", len(names)-30))
	}
	return strings.Join(parts, ", ")
}

// testSpace warns when --test does not look like the training file's
// feature space: event fields that only one of the files has, or records
// with more than a tenth of their nonzero entries on indices the training
// file never uses. A model scored there would measure nothing of what it learned.
// "" when the files agree (or one cannot be read: loading says why).
func (c *evalCmd) testSpace(ctx context.Context, mc model.Config) string {
	train, err := c.census(ctx, c.Data, mc)
	if err != nil {
		return ""
	}
	test, err := c.census(ctx, c.Test, mc)
	if err != nil || test.records == 0 {
		return ""
	}
	if mc.Events {
		onlyTest, onlyTrain := missing(test.fields, train.fields, test.records), missing(train.fields, test.fields, train.records)
		if onlyTest == "" && onlyTrain == "" {
			return ""
		}
		return fmt.Sprintf("--test %s and --data %s have different fields (their first %d records): only in the test file: %s; only in the training file: %s",
			c.Test, c.Data, censusRecords, cmp.Or(onlyTest, "none"), cmp.Or(onlyTrain, "none"))
	}
	unseen := 0
	for j, n := range test.indices {
		if train.indices[j] == 0 {
			unseen += n
		}
	}
	if test.entries == 0 || 10*unseen <= test.entries {
		return ""
	}
	return fmt.Sprintf("--test %s looks like another feature space than --data %s: %d of its %d nonzero features (first %d records) are on indices the training file's first %d records never use",
		c.Test, c.Data, unseen, test.entries, test.records, train.records)
}

// missing lists the names of a that b lacks, "" when none; a name in
// fewer than 1 % of a's records is left out (an optional field that a
// sample happens to miss is no sign of another space).
func missing(a, b map[string]int, records int) string {
	only := map[string]int{}
	for n, k := range a {
		if b[n] == 0 && 100*k >= records {
			only[n] = k
		}
	}
	if len(only) == 0 {
		return ""
	}
	return counted(only)
}
