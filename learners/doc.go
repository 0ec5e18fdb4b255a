// Package learners implements budget kernel perceptrons: online binary
// classifiers whose model is f(x) = Σ_j α_j k(x_j, x) over an active set of
// support vectors that, for the budget learners, never exceeds its budget.
//
// Rules, stated once:
//
//   - One round is Round(x, y): the margin f(x) is computed with the current
//     model, then, if y is +1 or −1, the learner learns from (x, y). y = 0
//     predicts without learning. A round counts as a mistake when
//     y·f(x) ≤ 0, the update rule of every Perceptron-type paper (a zero
//     margin is never right).
//   - Learners are pure and deterministic: no I/O, no clock, no global
//     random state. A randomized learner (rbp) draws from its own seeded
//     generator, whose state travels with the learner's encoded state.
//   - MarshalBinary / Unmarshal carry the complete state. A restored learner
//     gives bit-identical margins to one that never stopped; the tests check
//     this for every learner at random cut points.
//   - Inputs are sparse.Vectors that satisfy the sparse package's rules
//     (sorted, unique, finite); the codec checks them, learners do not.
//   - A Learner owns copies of the vectors it keeps: callers may reuse the
//     slices they pass in as soon as Round returns.
//   - A Learner is not safe for concurrent use.
//   - Round panics on a label other than −1, 0, +1 (a programming error);
//     corrupt encoded state is an error wrapping ErrCorrupt, never a panic.
//
// Cost: one round is one kernel row, O(nnz(x) + Σ_j nnz(x_j)) with a dense
// scatter of x (O(n·d) over a dense mirror of the support vectors when they
// fill a third or more of their d columns), plus the update: O(1) amortized for perceptron, stoptron,
// rbp, lbp, O(B) for forgetron, spa and pa1 (a weight rescale or a second
// kernel row), O(B²) per removal for cks (exact margins from a cached
// kernel matrix), O(n²) per update for projectron and projectron++ (the
// incremental K⁻¹ of Eq. 11; their active set never shrinks), O(B²) per
// removal for tighter0 and tightest (cached f on the support set), O(B·N)
// for tighter with a validation reservoir of N, O(B²) per round for the
// second-order learners ((aI + K)⁻¹ kept incrementally). Squared norms and
// k(x_j, x_j) are cached per support vector, so every kernel costs one
// sparse dot product.
//
// Summation order: every dot product is one running sum over the common
// indices in increasing index order, the order of sparse.Vector.Dot, on
// every path (scatter, dense mirror, merge); the paths differ only in
// products with a zero, which leave such a sum unchanged. Kernel rows
// overlap the sums of several support vectors, never split one, and
// margins add α_j k(x_j, x) oldest first. So the kernel values and margins
// are those of the naive algorithms of the papers computed with
// Kernel.Eval, bit for bit, which the reference tests check; nothing here
// trades that for speed (no reassociated sums, no approximate exp).
//
// Primal form: perceptron and pa1 without max= on an affine kernel
// (linear, linear:bias=C, poly:degree=1; not normalized) keep w = Σ_j α_j
// x_j and β = Σ_j α_j instead of their support vectors, and a round costs
// O(nnz(x)). Their margins sum w·x, not Σ_j α_j k(x_j, x): they agree
// with the naive algorithms to rounding (1e-9 relative in the tests), not
// bit for bit. See primal.go and Form.
//
// Removal searches that tie (a9a has many duplicate rows) choose the oldest
// candidate.
//
// Learners and their papers (see Available for parameters):
//
//	perceptron  kernel Perceptron, no budget            Rosenblatt; Dekel et al. 2005 §2
//	stoptron    stops learning when full                Orabona et al. 2008 §5
//	cks         remove the largest self-excluded margin Crammer, Kandola, Singer 2003
//	forgetron   self-tuned shrink-and-forget            Dekel, Shalev-Shwartz, Singer 2005, Fig. 1
//	rbp         remove a random support vector          Cavallanti, Cesa-Bianchi, Gentile 2007, Fig. 2
//	lbp         remove the oldest support vector        same, §4
//	spa         Shifting Perceptron, λ decay            same, Fig. 1
//	pa1         kernel PA-I, C; no budget               Crammer et al. 2006
//	projectron  project onto the span when ‖δ‖ ≤ η      Orabona, Keshet, Caputo 2008, Algorithm 2
//	projectron++ also projected updates on margin errors same, §4.1
//	tighter0    remove what hurts support-set accuracy  Weston, Bordes, Bottou 2005, via Wang & Vucetic §II.A.4
//	tighter     same, validated on a reservoir of N     same
//	tightest    Beta-posterior expected hinge loss      Wang & Vucetic, Fig. 1
//	sop         Second-Order Perceptron, a; no budget   Cesa-Bianchi, Conconi, Gentile 2005
//	rbsop       SOP removing a random support vector    Cavallanti, Cesa-Bianchi, Gentile 2007 §4
//	lbsop       SOP removing the oldest                 same
//
// The margin of the second-order learners is h = y_Sᵀ(aI + K_S)⁻¹k(x),
// a positive multiple of the SOP's f(x) (f = a·h/s with s the Schur
// complement of x): the same sign, so the same predictions, mistakes and
// updates, at O(B) per round instead of O(B²). Their docs/sop.md has the
// derivation.
package learners
