package drift

import "testing"

// benchStream is a stationary stream with an occasional change, so that
// the detectors also cut and reset while measured.
func benchStream() []bool {
	return bernoulli(9, 1<<16, []int{1 << 14, 1 << 15, 3 << 14}, []float64{0.2, 0.4, 0.1, 0.3})
}

func benchAdd(b *testing.B, spec string) {
	s := benchStream()
	d := mustNew(b, spec)
	for _, x := range s { // steady state: the window and rows exist
		d.Add(x)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d.Add(s[i&(len(s)-1)])
	}
}

func BenchmarkADWINAdd(b *testing.B)       { benchAdd(b, "adwin") }
func BenchmarkDDMAdd(b *testing.B)         { benchAdd(b, "ddm") }
func BenchmarkPageHinkleyAdd(b *testing.B) { benchAdd(b, "page-hinkley") }

func TestAddAllocatesNothing(t *testing.T) {
	s := benchStream()
	for _, spec := range []string{"ddm", "page-hinkley"} {
		d := mustNew(t, spec)
		i := 0
		if a := testing.AllocsPerRun(len(s), func() { d.Add(s[i]); i = (i + 1) % len(s) }); a != 0 {
			t.Errorf("%s: %g allocations per Add", spec, a)
		}
	}
}
