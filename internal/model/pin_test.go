package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/internal/golden"
	"github.com/streamlearner/streamlearner/internal/pending"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/selection"
)

// TestUnmarshalPinned pins what Unmarshal makes of snapshots of every
// section (events and their featurizer, many classes, a selection, a
// pending store) and of every cut and one-byte change of their body, the
// checksum made right: the error, or the digest of the restored model's
// snapshot. The golden file holds each snapshot's outcome, a digest of
// the outcomes in order, and the outcomes counted.
func TestUnmarshalPinned(t *testing.T) {
	k, _ := learners.ParseKernel("rbf:gamma=0.5")
	var out strings.Builder
	for i, cfg := range []Config{
		{Learner: "rbp:budget=5", Kernel: k, Seed: 3},
		{Learner: "forgetron:budget=5", Kernel: k, Seed: 3, Classes: []string{Auto}},
		{Learner: "rbp:budget=5", Kernel: k, Seed: 3, Challengers: []Candidate{{Learner: "lbp:budget=4"}}, Select: selection.Config{Window: 2, Detector: "ddm"}},
		{Learner: "perceptron", Kernel: k, Events: true, Event: codec.EventConfig{LabelField: "y"}, Features: features.Config{Scale: features.ScaleOnline}, Classes: []string{Auto}},
		delayed(Config{Learner: "rbp:budget=5", Kernel: k, Events: true, Event: codec.EventConfig{KeyField: "id"}, Features: features.Config{HashBits: 10}}, pending.Config{MaxRecords: 7, MaxAge: 9}),
	} {
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for j, msg := range []string{`{"y":"a","x":1,"c":"u","id":"1"}`, `{"y":"b","x":2,"c":"v","id":"2"}`, `{"y":"a","x":0.5,"id":"3"}`} {
			if !cfg.Events {
				msg = []string{"+1 1:1 2:0.5", "-1 1:0.2 3:1", "+1 2:1"}[j]
			}
			m.StepAt([]byte(msg), At{Time: int64(j)})
		}
		snap, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "snapshot %d (%d bytes): %s\n", i, len(snap), unmarshalOutcome(snap))
		body := snap[:len(snap)-4]
		var outcomes []string
		for n := len(snapshotMagic) + 1; n < len(body); n++ {
			outcomes = append(outcomes, unmarshalOutcome(sealed(body[:n])))
		}
		for at := range body {
			for _, d := range []byte{1, 0x80, 0xff} {
				b := bytes.Clone(body)
				b[at] += d
				outcomes = append(outcomes, unmarshalOutcome(sealed(b)))
			}
		}
		fmt.Fprintf(&out, "  %d damaged, digest %x\n", len(outcomes), sha256.Sum256([]byte(strings.Join(outcomes, "\n"))))
		count := map[string]int{}
		for _, o := range outcomes {
			// The digest above pins the whole outcomes; the list is
			// for reading.
			if strings.HasPrefix(o, "restored ") {
				o = "restored"
			}
			if len(o) > 60 {
				o = o[:60] + "…"
			}
			count[o]++
		}
		for _, o := range slices.Sorted(maps.Keys(count)) {
			fmt.Fprintf(&out, "  %5d %q\n", count[o], o)
		}
	}
	golden.Check(t, "unmarshal.golden", []byte(out.String()))
}

// sealed is body with its checksum.
func sealed(body []byte) []byte {
	return binary.LittleEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, castagnoli))
}

func unmarshalOutcome(b []byte) string {
	m, err := Unmarshal(b)
	if err != nil {
		return err.Error()
	}
	snap, err := m.MarshalBinary()
	if err != nil {
		return "restored, not marshaled: " + err.Error()
	}
	return fmt.Sprintf("restored %x", sha256.Sum256(snap))
}
