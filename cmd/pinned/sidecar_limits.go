package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/elevenmessenger/pinned/sidecar"
	"github.com/elevenmessenger/pinned/sidecar/api"
)

// sidecarLimitFlags are the rate limits of pinned sidecar.
type sidecarLimitFlags struct {
	botRate, grantRate   float64
	botBurst, grantBurst int
}

// float is envDefaults' float64.
func (e *envDefaults) float(flagName string, def float64) float64 {
	if v, ok := os.LookupEnv(envName(flagName)); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			e.errs = append(e.errs, fmt.Sprintf("%s=%q is not a number", envName(flagName), v))
			return def
		}
		return f
	}
	return def
}

func (l *sidecarLimitFlags) register(fs *flag.FlagSet, env *envDefaults, h func(name, help string) string) {
	fs.Float64Var(&l.botRate, "bot-rate", env.float("bot-rate", 0), h("bot-rate", "the bot's `ops` a second across its replicas (shared on --redis-url); past it ops get 429 rate_limited before anything is sent; 0: no limit"))
	fs.IntVar(&l.botBurst, "bot-burst", int(env.int("bot-burst", 0)), h("bot-burst", "ops the bot may run at once above --bot-rate; default the rate, rounded up"))
	fs.Float64Var(&l.grantRate, "grant-rate", env.float("grant-rate", 0), h("grant-rate", "each grant's `ops` a second (a research session's calls under one grant); 0: no limit"))
	fs.IntVar(&l.grantBurst, "grant-burst", int(env.int("grant-burst", 0)), h("grant-burst", "ops a grant may run at once above --grant-rate; default the rate, rounded up"))
}

// apply checks the limits and sets them on cfg; an error is bad
// configuration.
func (l *sidecarLimitFlags) apply(cfg *sidecar.Config) error {
	rate := func(name string, r float64, burst int) (api.Rate, error) {
		switch {
		case r < 0 || r > 1e6 || r != r:
			return api.Rate{}, fmt.Errorf("--%s-rate must be 0 (no limit) to 1000000 ops a second, not %g", name, r)
		case burst < 0:
			return api.Rate{}, fmt.Errorf("--%s-burst must not be negative, not %d", name, burst)
		case r == 0 && burst > 0:
			return api.Rate{}, fmt.Errorf("--%s-burst needs --%s-rate", name, name)
		case r == 0:
			return api.Rate{}, nil
		}
		if burst == 0 {
			burst = max(1, int(r+0.999999))
		}
		return api.Rate{PerSecond: r, Burst: burst}, nil
	}
	var err error
	if cfg.BotRate, err = rate("bot", l.botRate, l.botBurst); err != nil {
		return err
	}
	cfg.GrantRate, err = rate("grant", l.grantRate, l.grantBurst)
	return err
}
