//go:build !(goexperiment.simd && amd64)

package learners

// useLanes is false without GOEXPERIMENT=simd on amd64: mulCols is scalar.
const useLanes = false

func mulColsLanes(m []float64, ld int, v, out []float64) int { return 0 }
