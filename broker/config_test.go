package broker

import (
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/registry"
)

// TestConfigDefaults: a zero or negative field is its documented default;
// a positive one is kept.
func TestConfigDefaults(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		stateTTL time.Duration
		provider time.Duration
		rate     float64
		burst    int
	}{
		{name: "zero", cfg: Config{}, stateTTL: DefaultStateTTL, provider: DefaultProviderTimeout, rate: DefaultRefreshRate, burst: DefaultRefreshBurst},
		{name: "negative", cfg: Config{StateTTL: -1, ProviderTimeout: -1, RefreshRate: -1, RefreshBurst: -1},
			stateTTL: DefaultStateTTL, provider: DefaultProviderTimeout, rate: DefaultRefreshRate, burst: DefaultRefreshBurst},
		{name: "set", cfg: Config{StateTTL: time.Minute, ProviderTimeout: time.Second, RefreshRate: 0.5, RefreshBurst: 2},
			stateTTL: time.Minute, provider: time.Second, rate: 0.5, burst: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			if c.stateTTL() != tt.stateTTL || c.providerTimeout() != tt.provider || c.refreshRate() != tt.rate || c.refreshBurst() != tt.burst {
				t.Errorf("got %v %v %v %d, want %v %v %v %d", c.stateTTL(), c.providerTimeout(), c.refreshRate(), c.refreshBurst(),
					tt.stateTTL, tt.provider, tt.rate, tt.burst)
			}
		})
	}
	zero := Config{}
	if zero.registry() != registry.Default() {
		t.Error("a nil Registry is not registry.Default()")
	}
	if d := time.Since(zero.now()()); d < 0 || d > time.Minute {
		t.Errorf("a nil Now is %v off the clock", d)
	}
	fixed := time.Unix(1, 0)
	if got := (&Config{Now: func() time.Time { return fixed }}).now()(); !got.Equal(fixed) {
		t.Errorf("Now not kept: %v", got)
	}
}
