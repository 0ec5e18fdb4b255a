// Package replay evaluates how learners track a drifting target: it plays
// one ordered stream of records through several learners side by side,
// each predicting then learning exactly as the service does, and reports
// for each learner the cumulative and windowed mistake rate, the support
// size over time, the mistake rate of every segment between known shifts,
// the recovery after each shift and what drift detectors saw.
//
// The rules, stated once:
//
//   - A [Stream] is one partition's records in offset order. Its learners
//     are seeded as the service seeds the learner of that partition
//     (Seed + partition), so a replay reproduces what `run` computed, and
//     `eval --keep-order --seed Seed+partition` on the same records gives
//     the same mistake rate and support.
//   - Positions are rounds: the 0-based index of a record among the
//     stream's decodable records (bad records are counted, not played).
//     Offsets are reported beside rounds.
//   - A shift is the round of the first record of a new segment: the
//     first record at or past a known shift offset, or the first record
//     whose segment header is higher than any before it (in a gradual
//     drift, where the new concept first appears).
//   - Recovery after a shift is the number of records from the shift until
//     the mistake rate over the last RecoveryWindow labeled post-shift
//     records is back within Tolerance of the pre-shift level (the
//     windowed rate over Window labeled records just before the shift).
//     It is at least RecoveryWindow records, and absent when the learner
//     did not recover before the next shift or the end. When the first
//     full window already is back, the learner may have recovered sooner,
//     which no window can tell: the recovery is a bound (Recovery.AtMost,
//     shown as ≤N).
//   - Labels that come late. With Config.Delay = N each labeled record is
//     predicted when it comes and its label revealed N records later
//     (model.Delayer, one per learner): the record is learned, and the
//     prediction emitted for it scored, at the round its label is
//     revealed; the labels still held back at the partition's end are
//     revealed then ([Stream.Flush]), so every labeled record is scored.
//     The numbers are `eval --delay N --keep-order` on the same records.
//     With delayed labels (Config.Model.Delayed) the stream holds records
//     and their label messages (a key and a label, no feature), played by
//     model.StepAt with each message's key, timestamp (ms) and offset as
//     the service plays them, so the numbers are the service's; a label
//     message is a round, its record's prediction is scored when it comes,
//     and a label the model refuses (label_unknown, label_expired,
//     label_evicted, label_without_key) is counted per learner
//     ([DelayedLabels]) and the replay goes on.
//   - A label topic (Source.LabelTopic) holds the labels of the topic's
//     records, co-partitioned with it: the same partition count (checked
//     before reading) and each label keyed as its record, so partition p
//     of one holds the labels of partition p of the other. Each partition
//     is read in both topics up to their ends when the replay starts and
//     played as one sequence, merged deterministically: by record
//     timestamp (ms), then the topic before the label topic, then offset;
//     each topic keeps its own order (a merge, not a sort). A replay of
//     the pair has the numbers of a replay of one topic holding the same
//     messages in that order (the offsets reported are the topic's; the
//     label topic's records are counted apart).
//   - Everything here but [Read] is pure: no I/O, no clocks except the
//     examples/s figure, deterministic given the records and Seed.
package replay

// SegmentHeader is the Kafka record header that carries, as a decimal
// number, the segment (concept) of the point a record holds: gen writes it
// and replay reads it to find where the concept changed.
const SegmentHeader = "streamlearner.segment"
