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
	botRate, grantRate     float64
	botBurst, grantBurst   int
	botDayOps, botDayBytes int64
	grantOps, grantBytes   int64
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
	fs.Int64Var(&l.botDayOps, "bot-max-ops-per-day", env.int("bot-max-ops-per-day", 0), h("bot-max-ops-per-day", "the bot's ops per UTC day across its replicas; past it 429 rate_limited (limit bot_budget); 0: no cap"))
	fs.Int64Var(&l.botDayBytes, "bot-max-bytes-per-day", env.int("bot-max-bytes-per-day", 0), h("bot-max-bytes-per-day", "data bytes the bot's ops may return per UTC day; 0: no cap"))
	fs.Int64Var(&l.grantOps, "grant-max-ops", env.int("grant-max-ops", 0), h("grant-max-ops", "ops one grant may run (a research session's calls); 0: no cap"))
	fs.Int64Var(&l.grantBytes, "grant-max-bytes", env.int("grant-max-bytes", 0), h("grant-max-bytes", "data bytes one grant's ops may return; 0: no cap"))
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
	if cfg.GrantRate, err = rate("grant", l.grantRate, l.grantBurst); err != nil {
		return err
	}
	for _, c := range []struct {
		name string
		v    int64
	}{{"--bot-max-ops-per-day", l.botDayOps}, {"--bot-max-bytes-per-day", l.botDayBytes}, {"--grant-max-ops", l.grantOps}, {"--grant-max-bytes", l.grantBytes}} {
		if c.v < 0 {
			return fmt.Errorf("%s must not be negative (0: no cap), not %d", c.name, c.v)
		}
	}
	cfg.BotDailyCap = api.Cap{Ops: l.botDayOps, Bytes: l.botDayBytes}
	cfg.GrantCap = api.Cap{Ops: l.grantOps, Bytes: l.grantBytes}
	return nil
}
