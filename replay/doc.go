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
//     did not recover before the next shift or the end.
//   - Everything here but [Read] is pure: no I/O, no clocks except the
//     examples/s figure, deterministic given the records and Seed.
package replay
