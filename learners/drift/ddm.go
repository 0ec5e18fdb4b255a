package drift

import (
	"fmt"
	"math"
)

// DDMConfig parameterizes DDM. The zero value is the default detector;
// every zero field takes its default.
type DDMConfig struct {
	// MinInstances is how many rounds DDM watches before it tracks the
	// minimum or signals anything: before that, p and s rest on too few
	// rounds to mean anything. Counted again from 1 after every drift.
	// Default 30.
	MinInstances int
	// WarningLevel: DDM is in the warning zone while
	// p + s > p_min + WarningLevel·s_min. Default 2.
	WarningLevel float64
	// DriftLevel is the multiple for a drift: p + s > p_min + DriftLevel·s_min.
	// It must exceed WarningLevel. Default 3.
	DriftLevel float64
}

// The DDM defaults of Gama et al. 2004.
const (
	DefaultDDMMinInstances = 30
	DefaultDDMWarningLevel = 2.0
	DefaultDDMDriftLevel   = 3.0
)

// Validate rejects a configuration no detector can run with. Zero fields
// are valid: they mean the default.
func (c DDMConfig) Validate() error {
	if err := nonNegative("ddm", "min-instances", c.MinInstances); err != nil {
		return err
	}
	if err := nonNegative("ddm", "warning", c.WarningLevel); err != nil {
		return err
	}
	if err := nonNegative("ddm", "drift", c.DriftLevel); err != nil {
		return err
	}
	d := c.withDefaults()
	if d.DriftLevel <= d.WarningLevel {
		return fmt.Errorf("ddm: drift=%g is not above warning=%g", d.DriftLevel, d.WarningLevel)
	}
	return nil
}

func (c DDMConfig) withDefaults() DDMConfig {
	orDefault(&c.MinInstances, DefaultDDMMinInstances)
	orDefault(&c.WarningLevel, DefaultDDMWarningLevel)
	orDefault(&c.DriftLevel, DefaultDDMDriftLevel)
	return c
}

// DDM is the Drift Detection Method of Gama, Medas, Castillo & Rodrigues
// (2004): the error rate p_i of the rounds since the last drift, with its
// binomial standard deviation s_i = √(p_i(1−p_i)/i), is compared with the
// lowest p + s seen since then.
type DDM struct {
	cfg        DDMConfig
	n, errors  int64 // rounds and mistakes since the last drift
	p, s       float64
	pMin, sMin float64
	psMin      float64 // pMin + sMin; +Inf until the minimum is tracked
	warning    bool
}

// NewDDM returns a DDM detector.
func NewDDM(cfg DDMConfig) (*DDM, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &DDM{cfg: cfg.withDefaults()}
	d.reset()
	return d, nil
}

// Name is "ddm".
func (d *DDM) Name() string { return "ddm" }

// Config is the configuration in use, defaults filled in.
func (d *DDM) Config() DDMConfig { return d.cfg }

// InWarning reports whether the last round left DDM in the warning zone:
// p + s above p_min + WarningLevel·s_min but not yet a drift.
func (d *DDM) InWarning() bool { return d.warning }

func (d *DDM) reset() {
	*d = DDM{cfg: d.cfg, psMin: math.Inf(1)}
}

// Add updates p and s with the round and compares them with the minimum.
//
// The comparisons are strict: at the round that sets the minimum, p + s
// equals p_min + s_min, and while no mistake was made s_min is 0, so with
// ≥ every such round would already be a drift.
func (d *DDM) Add(mistake bool) bool {
	d.n++
	if mistake {
		d.errors++
	}
	n := float64(d.n)
	d.p = float64(d.errors) / n
	d.s = math.Sqrt(d.p * (1 - d.p) / n)
	d.warning = false
	if d.n < int64(d.cfg.MinInstances) {
		return false
	}
	if d.p+d.s <= d.psMin {
		d.pMin, d.sMin, d.psMin = d.p, d.s, d.p+d.s
	}
	switch {
	case d.p+d.s > d.pMin+d.cfg.DriftLevel*d.sMin:
		d.reset()
		return true
	case d.p+d.s > d.pMin+d.cfg.WarningLevel*d.sMin:
		d.warning = true
	}
	return false
}
