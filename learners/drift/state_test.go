package drift

import (
	"math/rand/v2"
	"testing"
)

// A detector encoded at any round and decoded continues exactly: the same
// alarms at the same rounds as one never stopped, for all three.
func TestDetectorStateContinuesExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	mistakes := make([]bool, 6000)
	for i := range mistakes {
		p := 0.1
		if i >= 2000 && i < 4000 {
			p = 0.45
		}
		mistakes[i] = r.Float64() < p
	}
	for _, spec := range []string{"adwin", "ddm", "page-hinkley", "adwin:delta=0.01,clock=1"} {
		straight, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		want := Run(straight, mistakes)
		if len(want) == 0 {
			t.Fatalf("%s: no alarm: the test proves nothing", spec)
		}
		d, _ := New(spec)
		var got []int64
		for i, m := range mistakes {
			if i%997 == 500 {
				b, err := Marshal(d)
				if err != nil {
					t.Fatal(err)
				}
				if d, err = Unmarshal(b); err != nil {
					t.Fatalf("%s at %d: %v", spec, i, err)
				}
			}
			if d.Add(m) {
				got = append(got, int64(i))
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%s: alarms %v after restores, %v straight", spec, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: alarms %v after restores, %v straight", spec, got, want)
			}
		}
	}
}

func TestDetectorStateRejectsDamage(t *testing.T) {
	d, _ := New("adwin")
	for i := range 500 {
		d.Add(i%7 == 0)
	}
	b, _ := Marshal(d)
	for cut := range len(b) {
		if _, err := Unmarshal(b[:cut]); err == nil {
			t.Fatalf("a state cut to %d of %d bytes was accepted", cut, len(b))
		}
	}
	if _, err := Unmarshal(append(b, 0)); err == nil {
		t.Fatal("trailing bytes accepted")
	}
}
