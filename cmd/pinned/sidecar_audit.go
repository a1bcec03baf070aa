package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/internal/audit"
)

// auditOff is the --audit-log value that turns the audit trail off.
const auditOff = "off"

// sidecarAuditFlags are the audit trail's knobs of pinned sidecar.
type sidecarAuditFlags struct {
	dir          string
	keyFile      string
	replica      string
	fsync        string
	maxFileBytes int64
	sealEvery    int
	sealInterval time.Duration
}

func (a *sidecarAuditFlags) register(fs *flag.FlagSet, env *envDefaults, h func(name, help string) string) {
	fs.StringVar(&a.dir, "audit-log", env.str("audit-log", ""), h("audit-log", "`directory` of the audit trail: one hash-chained, sealed record per op and refusal, a chain per replica (docs/OPERATING.md, \"Audit and evidence\"); default <state-dir>/audit when --state-dir is set; off: no trail"))
	fs.StringVar(&a.keyFile, "audit-key-file", env.str("audit-key-file", ""), h("audit-key-file", "`file` holding the Ed25519 key that seals the audit chain (pinned audit keygen); default <state-dir>/audit-key.pem, created when absent"))
	fs.StringVar(&a.replica, "audit-replica", env.str("audit-replica", ""), h("audit-replica", "`name` of this replica's chain under --audit-log; default the host name; unique per running replica"))
	fs.StringVar(&a.fsync, "audit-fsync", env.str("audit-fsync", audit.FsyncSeal), h("audit-fsync", "`policy`: when the audit file is synced to disk: seal (at each seal, rotation and shutdown) or always (after every record)"))
	fs.Int64Var(&a.maxFileBytes, "audit-max-file-bytes", env.int("audit-max-file-bytes", audit.DefaultMaxFileBytes), h("audit-max-file-bytes", "size past which the audit log moves to a new file (the chain carries on)"))
	fs.IntVar(&a.sealEvery, "audit-seal-every", int(env.int("audit-seal-every", audit.DefaultSealEvery)), h("audit-seal-every", "seal the audit chain after this many records"))
	fs.DurationVar(&a.sealInterval, "audit-seal-interval", env.dur("audit-seal-interval", audit.DefaultSealInterval), h("audit-seal-interval", "seal the audit chain this often when records were written since the last seal"))
}

// replicaName turns a host name into a replica name: characters outside
// A-Z a-z 0-9 . _ - become "-", at most 64.
func replicaName(host string) string {
	s := regexp.MustCompile(`[^A-Za-z0-9._-]`).ReplaceAllString(host, "-")
	for len(s) > 0 && s[0] == '.' {
		s = s[1:]
	}
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		s = "sidecar"
	}
	return s
}

// auditConfig is the resolved audit trail: off when dir is "".
type auditConfig struct {
	dir, keyFile string
	opt          audit.Options
}

// resolve checks the audit flags against the state directory: an error is
// bad configuration (exit 2).
func (a *sidecarAuditFlags) resolve(stateDir string) (auditConfig, error) {
	var c auditConfig
	dir, keyFile := a.dir, a.keyFile
	switch {
	case dir == auditOff:
		return c, nil
	case dir == "" && stateDir == "":
		return c, nil // no state directory: off unless asked for
	case dir == "":
		dir = filepath.Join(stateDir, "audit")
	}
	if keyFile == "" {
		if stateDir == "" {
			return c, errors.New("--audit-log needs --audit-key-file (the sealing key; create one with pinned audit keygen) when --state-dir is empty")
		}
		keyFile = filepath.Join(stateDir, "audit-key.pem")
	}
	replica := a.replica
	if replica == "" {
		h, err := os.Hostname()
		if err != nil {
			h = ""
		}
		replica = replicaName(h)
	}
	if err := audit.CheckReplica(replica); err != nil {
		return c, fmt.Errorf("--audit-replica: %s", errText(err))
	}
	if a.fsync != audit.FsyncSeal && a.fsync != audit.FsyncAlways {
		return c, fmt.Errorf("--audit-fsync %q: want %s or %s", a.fsync, audit.FsyncSeal, audit.FsyncAlways)
	}
	if a.maxFileBytes < 4096 {
		return c, fmt.Errorf("--audit-max-file-bytes must be at least 4096, not %d", a.maxFileBytes)
	}
	if a.sealEvery <= 0 {
		return c, fmt.Errorf("--audit-seal-every must be positive, not %d", a.sealEvery)
	}
	if a.sealInterval <= 0 {
		return c, fmt.Errorf("--audit-seal-interval must be positive, not %s", a.sealInterval)
	}
	c.dir, c.keyFile = dir, keyFile
	c.opt = audit.Options{Replica: replica, MaxFileBytes: a.maxFileBytes, SealEvery: a.sealEvery, SealInterval: a.sealInterval, Fsync: a.fsync}
	return c, nil
}

// open reads (or, at its default place, creates) the sealing key and
// opens the replica's chain; nil when the trail is off.
func (c auditConfig) open(defaultKey bool, log zerolog.Logger) (*audit.Log, error) {
	if c.dir == "" {
		return nil, nil
	}
	var key ed25519.PrivateKey
	var err error
	created := false
	if defaultKey {
		if err := os.MkdirAll(filepath.Dir(c.keyFile), 0o700); err != nil {
			return nil, fmt.Errorf("--state-dir: %s", errText(err))
		}
		key, created, err = audit.ReadOrCreateKey(c.keyFile)
	} else {
		key, err = audit.ReadKey(c.keyFile)
	}
	if err != nil {
		return nil, fmt.Errorf("--audit-key-file: %s", errText(err))
	}
	opt := c.opt
	opt.Key = key
	opt.Note = "pinned " + binaryVersion()
	l, err := audit.Open(c.dir, opt)
	if err != nil {
		return nil, fmt.Errorf("--audit-log: %s", errText(err))
	}
	pub := base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey))
	ev := log.Info().Str("event", "audit_log").Str("dir", c.dir).Str("replica", opt.Replica).Str("pubkey", pub).Str("fsync", opt.Fsync)
	if created {
		ev = ev.Str("created_key", c.keyFile)
	}
	ev.Msg("audit trail on: verify it with pinned audit verify DIR --pubkey " + c.keyFile + ".pub")
	return l, nil
}
