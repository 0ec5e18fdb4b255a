// Package synth generates the synthetic binary classification data sets used
// in the budget kernel perceptron papers that streamlearner reproduces.
//
//   - [Gauss] is the two-Gaussian set of Orabona, Keshet and Caputo,
//     "The Projectron: a Bounded Kernel-Based Perceptron", ICML 2008
//     (the synthetic data of Table 3).
//   - [Checkerboard] is the NCheckerboard set of Wang and Vucetic,
//     "Tighter Perceptron with Improved Dual Use of Cached Data for Model
//     Representation and Validation"; with Noise 0 it gives the noise-free
//     set used for testing.
//
// Drifting streams, for evaluating how learners track a changing target
// (see drift.go): [SEA] (Street and Kim, KDD 2001), [Hyperplane] (the
// rotating hyperplane of Hulten, Spencer and Domingos, KDD 2001),
// [GaussDrift] (the two-Gaussian set with rotating means),
// [RotatingCheckerboard] (Elwell and Polikar's rotating checkerboard), and
// [Chunks], the construction of Cavallanti, Cesa-Bianchi and Gentile,
// "Tracking the best hyperplane with a simple budget Perceptron": a
// multi-class data set cut into consecutive chunks, each binarized against
// its own target.
//
// Configurations have no hidden defaults: every zero value means what it
// says (in particular Noise 0 means no label noise). [DefaultGauss] and
// [DefaultCheckerboard] return the papers' settings, and invalid
// configurations are rejected with an error rather than silently repaired.
//
// Determinism: for a given configuration, including Seed, the generated
// points are identical bit for bit on every platform and Go release. To make
// that promise the package takes only raw 64-bit words from the PCG-DXSM
// generator of math/rand/v2, whose output is fixed, and turns them into
// uniforms, normals, bounded integers and logarithms with its own code, not
// with rand.Rand helpers or math.Log, which may change between releases or
// differ between architectures. Floating-point products are explicitly
// rounded so that no compiler may fuse them into multiply-adds.
// Label noise is drawn from a stream separate from the one that places the
// points, so for a given Seed the positions and true classes do not depend
// on Noise.
package synth

// Point is one generated example.
type Point struct {
	// X holds the dense features: X[i] is feature i+1 in LIBSVM numbering.
	X []float64
	// Y is the label, +1 or -1.
	Y int
	// Segment is the 0-based index of the concept the point was drawn
	// from: always 0 in the stationary sets, and in a drifting stream the
	// concept actually used, so that during a gradual drift it may go back
	// and forth between two neighbours.
	Segment int
}
