// Package drift detects concept drift in a learner's mistake stream: fed
// one bool per labeled round (true = the learner erred), a Detector says
// at which rounds the mistake rate changed.
//
// Rules, stated once:
//
//   - Detectors are pure: no I/O, no goroutines, no clock, no randomness.
//     The same stream gives the same detections on every machine.
//   - A position is the 0-based index of a labeled round in the stream
//     given to the detector (unlabeled rounds are not fed). A detection at
//     position i was signalled by the Add of round i, after observing it;
//     a known change point at i means round i is the first of the new
//     concept, so a detection's delay is its position minus the change
//     point's.
//   - After signalling, a detector has already reset itself and goes on
//     with the next round: ADWIN keeps only the part of its window after
//     the cut, DDM and Page-Hinkley start counting from zero.
//   - Memory: ADWIN holds O(M·log(W)) buckets for a window of W rounds;
//     DDM and Page-Hinkley hold a few numbers, and their Add allocates
//     nothing.
//   - Configurations are structs whose zero value is the default detector;
//     New reads the same from a spec string "name[:key=value,...]".
//   - A Detector is not safe for concurrent use.
//
// Detectors, their papers and defaults:
//
//	adwin         Bifet & Gavaldà, "Learning from Time-Changing Data with
//	              Adaptive Windowing", SDM 2007: ADWIN2, the exponential
//	              histogram. δ = 0.002, M = 5 buckets a row, a cut test every
//	              32 rounds (as in MOA), sub-windows of at least 5 rounds.
//	              Cut when |μ̂₀ − μ̂₁| > ε = √(2/m·σ²_W·ln(2/δ')) + 2/(3m)·ln(2/δ'),
//	              δ' = δ/ln n, σ²_W the window's variance and
//	              1/m = 1/(n₀−4) + 1/(n₁−4) (the paper's 1/n₀ + 1/n₁ with
//	              each side shortened by the minimum length less one, as in
//	              MOA).
//	ddm           Gama, Medas, Castillo & Rodrigues, "Learning with Drift
//	              Detection", SBIA 2004. p_i, s_i = √(p_i(1−p_i)/i); warning
//	              when p+s > p_min + 2·s_min, drift when p+s > p_min + 3·s_min,
//	              from the 30th round since the last drift on.
//	page-hinkley  Page, "Continuous Inspection Schemes", Biometrika 1954, in
//	              the form used in stream mining: m_T = α·m_{T−1} + (x_T − x̄_T − δ),
//	              drift when m_T − min_t m_t > λ. δ = 0.005, λ = 50,
//	              α = 1 − 0.0001, from the 30th round on. Detects rises of
//	              the mistake rate only.
//
// Evaluate scores detections against known change points: detection
// delays, missed changes and false alarms.
package drift
