package learners

import (
	"fmt"
	"sort"
)

// Composite is a learner made of learners (package autolearn's search
// over learners, kernels and budgets). It registers here, so that New,
// Unmarshal, EstimateMemory and Available know its name, without this
// package importing the packages built on it.
type Composite struct {
	Info Info
	// Magic starts its encoded state (4 bytes, not "SLRN"): Unmarshal
	// hands such a state to Decode.
	Magic  string
	New    func(sp Spec, k Kernel, seed uint64) (Learner, error)
	Decode func(data []byte) (Learner, error)
	// Memory is the most the learner may hold on data shaped like d.
	Memory func(sp Spec, k Kernel, d Data) (Memory, error)
}

var composites = map[string]Composite{}

// RegisterComposite makes c's name a learner spec. It panics on a name or
// magic already taken: registrations happen in init functions.
func RegisterComposite(c Composite) {
	if _, ok := registry[c.Info.Name]; ok {
		panic("learners: composite " + c.Info.Name + " shadows a learner")
	}
	if len(c.Magic) != len(stateMagic) || c.Magic == stateMagic {
		panic("learners: composite " + c.Info.Name + ": bad magic")
	}
	for _, o := range composites {
		if o.Info.Name == c.Info.Name || o.Magic == c.Magic {
			panic("learners: composite " + c.Info.Name + " registered twice")
		}
	}
	composites[c.Info.Name] = c
}

// compositeByMagic is the composite whose state data is, if any.
func compositeByMagic(data []byte) (Composite, bool) {
	if len(data) < len(stateMagic) {
		return Composite{}, false
	}
	for _, c := range composites {
		if string(data[:len(c.Magic)]) == c.Magic {
			return c, true
		}
	}
	return Composite{}, false
}

// names lists every learner and composite name, sorted, for messages.
func names() []string {
	out := make([]string, 0, len(registry)+len(composites))
	for n := range registry {
		out = append(out, n)
	}
	for n := range composites {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// BoundedMemory is the estimate of a learner whose memory is bounded by a
// setting rather than by a budget of its own (a composite's memory= bound):
// at most vectors support vectors in all, held bytes held and peak at the
// peak; setting names the bound, which messages say to lower when it is
// too much.
func BoundedMemory(spec string, vectors int, held, peak int64, setting string) Memory {
	return Memory{Spec: spec, Vectors: max(vectors, 1), Held: held, Peak: peak,
		held: func(int) (int64, int64) { return held, peak }, what: "lower " + setting,
		order: fmt.Sprintf("bounded by %s", setting)}
}
