package drift

import (
	"slices"
	"strings"
	"testing"
)

func TestNewSpecs(t *testing.T) {
	cases := []struct {
		spec string
		want string // canonical String of the detector
	}{
		{"adwin", "adwin:buckets=5,clock=32,delta=0.002,min-window=5"},
		{"ADWIN : delta = 0.01 , clock=1", "adwin:buckets=5,clock=1,delta=0.01,min-window=5"},
		{"ddm", "ddm:drift=3,min-instances=30,warning=2"},
		{"ddm:warning=2.5,drift=4,min-instances=100", "ddm:drift=4,min-instances=100,warning=2.5"},
		{"page-hinkley", "page-hinkley:alpha=0.9999,delta=0.005,lambda=50,min-instances=30"},
		{"page-hinkley:lambda=50,delta=0.005", "page-hinkley:alpha=0.9999,delta=0.005,lambda=50,min-instances=30"},
		{"page-hinkley:lambda=20,alpha=1", "page-hinkley:alpha=1,delta=0.005,lambda=20,min-instances=30"},
	}
	for _, c := range cases {
		d, err := New(c.spec)
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		s, _ := d.(interface{ String() string })
		if s == nil || s.String() != c.want {
			t.Errorf("%q: built %v, want %s", c.spec, d, c.want)
		}
		if name, _, _ := strings.Cut(c.want, ":"); d.Name() != name {
			t.Errorf("%q: Name %q", c.spec, d.Name())
		}
		again, err := New(c.want)
		if err != nil || again.(interface{ String() string }).String() != c.want {
			t.Errorf("canonical %q does not build itself: %v", c.want, err)
		}
	}
}

func TestNewErrors(t *testing.T) {
	cases := []struct{ spec, mention string }{
		{"", "missing name"},
		{"kswin", "unknown name"},
		{"adwin:lambda=3", "unknown parameter"},
		{"adwin:delta", "not key=value"},
		{"adwin:delta=0.1,delta=0.2", "twice"},
		{"adwin:delta=abc", "not a finite number"},
		{"adwin:delta=NaN", "not a finite number"},
		{"adwin:delta=1.5", "(0, 1)"},
		{"adwin:delta=0", "not allowed"},
		{"adwin:clock=2.5", "not an integer"},
		{"adwin:buckets=-2", "buckets"},
		{"ddm:warning=3,drift=2", "not above"},
		{"ddm:min-instances=0", "not allowed"},
		{"page-hinkley:alpha=1.5", "(0, 1]"},
		{"page-hinkley:lambda=-1", "lambda"},
	}
	for _, c := range cases {
		_, err := New(c.spec)
		if err == nil {
			t.Errorf("%q accepted", c.spec)
			continue
		}
		if !strings.Contains(err.Error(), c.mention) || !strings.HasPrefix(err.Error(), "detector") {
			t.Errorf("%q: error %q, want one starting with detector and mentioning %q", c.spec, err, c.mention)
		}
	}
}

func TestNamesAndDefaults(t *testing.T) {
	if got := Names(); !slices.Equal(got, []string{"adwin", "ddm", "page-hinkley"}) {
		t.Errorf("Names() = %v", got)
	}
	defaults := Defaults()
	if len(defaults) != len(Names()) {
		t.Fatalf("Defaults() = %v", defaults)
	}
	for i, spec := range defaults {
		d, err := New(spec)
		if err != nil {
			t.Fatalf("%q: %v", spec, err)
		}
		plain, _ := New(Names()[i])
		if d.Name() != Names()[i] || d.(interface{ String() string }).String() != plain.(interface{ String() string }).String() {
			t.Errorf("default %q is not the plain %q", spec, Names()[i])
		}
	}
}
