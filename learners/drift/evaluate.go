package drift

import (
	"slices"
)

// Match pairs detections with known change points: each known point is detected by the first detection
// at or after it and before the next known point (and within maxDelay rounds if maxDelay > 0);
// detections not matched to any known point are false alarms.
type Match struct {
	Known       []int64 `json:"known"`        // known change points (positions in the stream, 0-based round index), sorted, without repeats
	Detected    []int64 `json:"detected"`     // detections, sorted
	Delays      []int64 `json:"delays"`       // per known point: rounds from the known point to its detection, -1 if missed
	FalseAlarms int     `json:"false_alarms"` // detections matched to no known point
	Missed      int     `json:"missed"`       // known points never detected
	MeanDelay   float64 `json:"mean_delay"`   // over detected known points; 0 if none
}

// Evaluate matches detections to known change points as Match describes.
// The inputs need not be sorted and are not modified; a repeated known
// point counts once, since a stream changes only once at a position.
func Evaluate(known, detected []int64, maxDelay int64) Match {
	k := slices.Compact(slices.Sorted(slices.Values(known)))
	d := slices.Sorted(slices.Values(detected))
	m := Match{Known: k, Detected: d, Delays: make([]int64, len(k))}
	matched := 0
	j := 0 // first detection not yet passed
	var sum int64
	for i, c := range k {
		for j < len(d) && d[j] < c {
			j++
		}
		m.Delays[i] = -1
		if j == len(d) {
			continue
		}
		delay := d[j] - c
		beforeNext := i+1 == len(k) || d[j] < k[i+1]
		if beforeNext && (maxDelay <= 0 || delay <= maxDelay) {
			m.Delays[i] = delay
			sum += delay
			matched++
			j++
		}
	}
	m.Missed = len(k) - matched
	m.FalseAlarms = len(d) - matched
	if matched > 0 {
		m.MeanDelay = float64(sum) / float64(matched)
	}
	return m
}
