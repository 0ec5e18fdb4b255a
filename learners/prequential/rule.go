package prequential

// The reporting rule. Every report of the project — eval, replay, the
// demo, the predictions the service writes, its metrics — says what the
// model predicted and whether that was a mistake by this one rule, so the
// numbers agree wherever they are read:
//
//	prediction = sign(f), with sign(0) = −1
//	mistake    = the round is labeled and prediction ≠ label
//
// The learners' own update condition, y·f ≤ 0, stays inside the learners
// (learners.Outcome.Mistake says that and is what drives an update); the
// two differ only at f = 0 with label −1, where the learner still updates
// (a zero margin is never a confident answer) but the reported prediction,
// −1, was right.

// Predict is the reported prediction for margin f: +1 when f > 0,
// otherwise −1 (a zero or NaN margin answers −1).
func Predict(f float64) int {
	if f > 0 {
		return 1
	}
	return -1
}

// IsMistake reports whether a round with margin f and label y (+1, −1, or
// 0 for unlabeled) is a mistake by the reporting rule: labeled and
// Predict(f) ≠ y. An unlabeled round is never a mistake.
func IsMistake(f float64, y int) bool {
	return y != 0 && Predict(f) != y
}

// BinaryClass maps a binary label to the class index the evaluator's
// confusion matrix uses: −1 → 0, +1 → 1, anything else (unlabeled) → −1.
func BinaryClass(y int) int {
	switch y {
	case -1:
		return 0
	case 1:
		return 1
	}
	return -1
}
