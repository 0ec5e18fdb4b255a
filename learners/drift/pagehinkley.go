package drift

import (
	"fmt"
	"math"
)

// PageHinkleyConfig parameterizes the Page-Hinkley test. The zero value is
// the default detector; every zero field takes its default.
type PageHinkleyConfig struct {
	// Delta is δ, the rise of the mistake rate over its running mean that
	// is tolerated: each round adds x_t − x̄_t − δ, so smaller rises than δ
	// drift the statistic down instead of up. A δ of exactly 0 cannot be
	// asked for (zero means the default); use a tiny positive value.
	// Default 0.005.
	Delta float64
	// Lambda is λ, the threshold on m_T − M_T. Larger means fewer false
	// alarms and later detections. Default 50.
	Lambda float64
	// Alpha is the fading factor α ∈ (0, 1] applied to m_T before each
	// round's term is added, so that the distant past weighs less; 1 is
	// the unfaded test. Default 1 − 0.0001.
	Alpha float64
	// MinInstances is how many rounds since the start or the last drift
	// pass before a drift can be signalled, so that x̄ has settled.
	// Default 30.
	MinInstances int
}

// The Page-Hinkley defaults used in stream mining.
const (
	DefaultPHDelta        = 0.005
	DefaultPHLambda       = 50.0
	DefaultPHAlpha        = 1 - 0.0001
	DefaultPHMinInstances = 30
)

// Validate rejects a configuration no detector can run with. Zero fields
// are valid: they mean the default.
func (c PageHinkleyConfig) Validate() error {
	if err := nonNegative("page-hinkley", "delta", c.Delta); err != nil {
		return err
	}
	if err := nonNegative("page-hinkley", "lambda", c.Lambda); err != nil {
		return err
	}
	if c.Alpha != 0 && !(c.Alpha > 0 && c.Alpha <= 1) {
		return fmt.Errorf("page-hinkley: alpha=%g is not in (0, 1]", c.Alpha)
	}
	return nonNegative("page-hinkley", "min-instances", c.MinInstances)
}

func (c PageHinkleyConfig) withDefaults() PageHinkleyConfig {
	orDefault(&c.Delta, DefaultPHDelta)
	orDefault(&c.Lambda, DefaultPHLambda)
	orDefault(&c.Alpha, DefaultPHAlpha)
	orDefault(&c.MinInstances, DefaultPHMinInstances)
	return c
}

// PageHinkley is the Page-Hinkley test (Page 1954) for a rise of the mean
// of x_t, the round's mistake as 0 or 1: with x̄_t the mean of x_1..x_t,
// m_T = α·m_{T−1} + (x_T − x̄_T − δ) and M_T = min_{t≤T} m_t, it signals
// when m_T − M_T > λ. A falling mistake rate only lowers m_T, so it is
// never reported: only a learner getting worse is a drift here.
type PageHinkley struct {
	cfg  PageHinkleyConfig
	n    int64
	mean float64 // x̄_n
	m    float64 // m_n
	min  float64 // M_n; +Inf before the first round
}

// NewPageHinkley returns a Page-Hinkley detector.
func NewPageHinkley(cfg PageHinkleyConfig) (*PageHinkley, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &PageHinkley{cfg: cfg.withDefaults()}
	p.reset()
	return p, nil
}

// Name is "page-hinkley".
func (p *PageHinkley) Name() string { return "page-hinkley" }

// Config is the configuration in use, defaults filled in.
func (p *PageHinkley) Config() PageHinkleyConfig { return p.cfg }

// Statistic is m_T − M_T after the last round, the value compared with λ.
func (p *PageHinkley) Statistic() float64 {
	if p.n == 0 {
		return 0
	}
	return p.m - p.min
}

func (p *PageHinkley) reset() { *p = PageHinkley{cfg: p.cfg, min: math.Inf(1)} }

// Add updates the statistic with the round and resets the test when it
// exceeds λ.
func (p *PageHinkley) Add(mistake bool) bool {
	x := 0.0
	if mistake {
		x = 1
	}
	p.n++
	p.mean += (x - p.mean) / float64(p.n)
	p.m = p.cfg.Alpha*p.m + (x - p.mean - p.cfg.Delta)
	p.min = math.Min(p.min, p.m)
	if p.n >= int64(p.cfg.MinInstances) && p.m-p.min > p.cfg.Lambda {
		p.reset()
		return true
	}
	return false
}
