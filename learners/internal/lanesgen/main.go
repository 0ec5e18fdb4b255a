// Command lanesgen writes learners/lanes_amd64.s, the AVX-512 kernels of
// mulCols, with avo. Run it through `go generate ./learners/` (it is its
// own module, so avo is no dependency of streamlearner).
//
// Every lane is one running sum: a VMULPD then a VADDPD, two roundings, as
// Go's scalar `s += a * x` (never a fused multiply-add, which rounds once
// and would change the bits). Each kernel ends with VZEROUPPER, so the SSE
// code Go compiles float64 arithmetic to runs at full speed after it.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

func main() {
	kernel(32)
	kernel(8)
	Generate()
}

// kernel writes colsN(m *float64, ld int, v []float64, out *[N]float64):
// out[i] = Σ_j m[j·ld+i]·v[j] for i < N, summing in increasing j.
func kernel(lanes int) {
	regs := lanes / 8
	TEXT(fmt.Sprintf("cols%d", lanes), NOSPLIT, fmt.Sprintf("func(m *float64, ld int, v []float64, out *[%d]float64)", lanes))
	Doc(fmt.Sprintf("cols%d sets out[i] = Σ_j m[j·ld+i]·v[j] for i < %d, in increasing j. Needs AVX-512F.", lanes, lanes))
	m := Load(Param("m"), GP64())
	ld := Load(Param("ld"), GP64())
	SHLQ(Imm(3), ld) // in bytes
	vp := Load(Param("v").Base(), GP64())
	n := Load(Param("v").Len(), GP64())
	out := Load(Param("out"), GP64())

	acc := make([]reg.VecVirtual, regs)
	for k := range acc {
		acc[k] = ZMM()
		VPXORQ(acc[k], acc[k], acc[k]) // +0, as a scalar sum starts
	}
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	b := ZMM()
	VBROADCASTSD(Mem{Base: vp}, b)
	for k := range acc {
		p := ZMM()
		VMULPD(Mem{Base: m, Disp: 64 * k}, b, p)
		VADDPD(p, acc[k], acc[k])
	}
	ADDQ(ld, m)
	ADDQ(Imm(8), vp)
	DECQ(n)
	JMP(LabelRef("loop"))

	Label("done")
	for k := range acc {
		VMOVUPD(acc[k], Mem{Base: out, Disp: 64 * k})
	}
	VZEROUPPER()
	RET()
}
