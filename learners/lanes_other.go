//go:build !amd64 || purego

package learners

// useLanes is false without the amd64 kernels (other architectures, or
// the purego tag): mulCols is scalar.
const useLanes = false

func mulColsLanes(m []float64, ld int, v, out []float64) int { return 0 }

func addScaledLanes(y, x []float64, a float64) int { return 0 }

func subScaledLanes(dst, src, x []float64, a float64) int { return 0 }
