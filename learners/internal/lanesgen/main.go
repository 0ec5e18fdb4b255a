// Command lanesgen writes learners/lanes_amd64.s, the AVX-512 kernels of
// mulCols and of the scaled row updates (addScaled, subScaled), with avo. Run it through `go generate ./learners/` (it is its
// own module, so avo is no dependency of streamlearner).
//
// Every lane is one running sum: a VMULPD then a VADDPD, two roundings, as
// Go's scalar `s += a * x` (never a fused multiply-add, which rounds once
// and would change the bits); the row updates likewise round the product,
// then the sum or difference. Each kernel ends with VZEROUPPER, so the SSE
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
	scaled("addScaled8", "dst[i] = src[i] + a·x[i]", VADDPD)
	scaled("subScaled8", "dst[i] = src[i] − a·x[i]", VSUBPD)
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

// scaled writes name(dst, src, x []float64, a float64) for the 8-lane
// blocks of len(dst): dst[i] = src[i] op a·x[i], the product rounded first,
// in increasing blocks, each block read before it is written, so that dst
// may start at or before src in the same array.
func scaled(name, what string, op func(...Op)) {
	TEXT(name, NOSPLIT, "func(dst, src, x []float64, a float64)")
	Doc(fmt.Sprintf("%s sets %s for i < len(dst) rounded down to a multiple of 8, the product rounded first; src and x hold at least as many. Needs AVX-512F.", name, what))
	dst := Load(Param("dst").Base(), GP64())
	n := Load(Param("dst").Len(), GP64())
	SHRQ(Imm(3), n)
	src := Load(Param("src").Base(), GP64())
	x := Load(Param("x").Base(), GP64())
	a := ZMM()
	VBROADCASTSD(Load(Param("a"), XMM()), a)
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	p, s := ZMM(), ZMM()
	VMULPD(Mem{Base: x}, a, p)
	VMOVUPD(Mem{Base: src}, s)
	op(p, s, s) // s op p: src's value first, as the scalar code has it
	VMOVUPD(s, Mem{Base: dst})
	ADDQ(Imm(64), dst)
	ADDQ(Imm(64), src)
	ADDQ(Imm(64), x)
	DECQ(n)
	JMP(LabelRef("loop"))

	Label("done")
	VZEROUPPER()
	RET()
}
