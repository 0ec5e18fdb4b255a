package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/dataset"
	"github.com/streamlearner/streamlearner/model"
	"github.com/streamlearner/streamlearner/offline"
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
	oneSided := len(mc.Classes) == 0 && len(labels.Positive) > 0 && (r.Positives == 0 || r.Positives == r.Labeled)
	if r.Labeled > 0 && !oneSided {
		return nil
	}
	cs, err := c.census(ctx, mc)
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

// census reads the first censusRecords records of the training file.
func (c *evalCmd) census(ctx context.Context, mc model.Config) (census, error) {
	cs := census{fields: map[string]int{}, labels: map[string]int{}}
	if !mc.Events {
		raw, err := dataset.LoadRaw(ctx, c.Data, dataset.Options{Limit: censusRecords, MaxBad: censusRecords})
		if err != nil {
			return cs, err
		}
		cs.records = len(raw.Labels)
		for _, l := range raw.Labels {
			cs.labels[l]++
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
	err = c.eachEvent(ctx, c.Data, mc, censusRecords, false, func(_ int, b []byte) error {
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
