package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/audit"
	"github.com/elevenmessenger/pinned/sidecar"
	"github.com/elevenmessenger/pinned/sidecar/api"
)

// writeTestChain writes a closed chain of n records for replica, sealed
// by the key in keyFile.
func writeTestChain(t *testing.T, dir, replica, keyFile string, n int) {
	t.Helper()
	key, err := audit.ReadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	l, err := audit.Open(dir, audit.Options{Replica: replica, Key: key, SealEvery: 4, SealInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := l.Append(context.Background(), api.AuditEvent{Source: "ops", Service: "github", Op: "get_viewer", Status: 200}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestAuditVerifyCommand(t *testing.T) {
	tmp := t.TempDir()
	keyFile := filepath.Join(tmp, "audit.key")
	var out, errb bytes.Buffer
	if code := dispatch([]string{"audit", "keygen", "--out", keyFile}, &out, &errb); code != 0 {
		t.Fatalf("keygen: %d %s", code, &errb)
	}
	pubB64 := strings.TrimSpace(out.String())
	if code := dispatch([]string{"audit", "keygen", "--out", keyFile}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "never overwritten") {
		t.Fatalf("keygen over a key: %d %s", code, &errb)
	}
	logDir := filepath.Join(tmp, "log")
	writeTestChain(t, logDir, "a", keyFile, 9)
	writeTestChain(t, logDir, "b", keyFile, 5)

	tests := []struct {
		name   string
		args   []string
		tamper func()
		code   int
		stdout []string
		stderr string
	}{
		{name: "whole, pubkey file", args: []string{"audit", "verify", logDir, "--pubkey", keyFile + ".pub"}, code: 0,
			stdout: []string{"a: whole: 13 records, sealed through seq 13\n", "b: whole: 8 records, sealed through seq 8\n"}},
		{name: "whole, pubkey base64, flags first", args: []string{"audit", "verify", "--pubkey", pubB64, logDir}, code: 0,
			stdout: []string{"a: whole"}},
		{name: "json", args: []string{"audit", "verify", logDir, "--pubkey", pubB64, "--output", "json"}, code: 0,
			stdout: []string{`"replica": "a"`, `"whole": true`}},
		{name: "no pubkey", args: []string{"audit", "verify", logDir}, code: 2, stderr: "--pubkey is required"},
		{name: "bad pubkey", args: []string{"audit", "verify", logDir, "--pubkey", "AAAA"}, code: 2, stderr: "neither a PEM file"},
		{name: "no chain", args: []string{"audit", "verify", tmp, "--pubkey", pubB64}, code: 1, stderr: "no audit chain"},
		{name: "unknown subcommand", args: []string{"audit", "verfy"}, code: 2, stderr: "want verify or keygen"},
		{name: "a record edited", args: []string{"audit", "verify", logDir, "--pubkey", pubB64}, code: 1,
			tamper: func() {
				files, _ := audit.Files(filepath.Join(logDir, "b"))
				b, _ := os.ReadFile(files[0])
				os.WriteFile(files[0], bytes.Replace(b, []byte(`"status":200`), []byte(`"status":201`), 1), 0o600)
			},
			stdout: []string{"a: whole", "b: NOT WHOLE: edited: record seq 2 at " + filepath.Join(logDir, "b", "audit-000001.jsonl") + " line 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.tamper != nil {
				tt.tamper()
			}
			var stdout, stderr bytes.Buffer
			code := dispatch(tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, &stderr, tt.code, tt.stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Fatalf("stdout %q lacks %q", &stdout, s)
				}
			}
		})
	}
}

func TestSidecarAuditFlags(t *testing.T) {
	state := t.TempDir()
	tests := []struct {
		name     string
		flags    sidecarAuditFlags
		stateDir string
		dir      string // "" when off
		key      string
		err      string
	}{
		{name: "on by default with a state dir", stateDir: state, dir: filepath.Join(state, "audit"), key: filepath.Join(state, "audit-key.pem")},
		{name: "off without a state dir", stateDir: ""},
		{name: "off when asked", flags: sidecarAuditFlags{dir: "off"}, stateDir: state},
		{name: "a dir without a key or state dir", flags: sidecarAuditFlags{dir: "/x"}, err: "needs --audit-key-file"},
		{name: "a dir and a key", flags: sidecarAuditFlags{dir: "/x", keyFile: "/k"}, dir: "/x", key: "/k"},
		{name: "bad replica", flags: sidecarAuditFlags{replica: "../x"}, stateDir: state, err: "--audit-replica"},
		{name: "bad fsync", flags: sidecarAuditFlags{fsync: "never"}, stateDir: state, err: "--audit-fsync"},
		{name: "tiny files", flags: sidecarAuditFlags{maxFileBytes: 10}, stateDir: state, err: "--audit-max-file-bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := sidecarAuditFlags{fsync: audit.FsyncSeal, maxFileBytes: audit.DefaultMaxFileBytes, sealEvery: 10, sealInterval: time.Second}
			if tt.flags.dir != "" {
				f.dir = tt.flags.dir
			}
			if tt.flags.keyFile != "" {
				f.keyFile = tt.flags.keyFile
			}
			if tt.flags.replica != "" {
				f.replica = tt.flags.replica
			}
			if tt.flags.fsync != "" {
				f.fsync = tt.flags.fsync
			}
			if tt.flags.maxFileBytes != 0 {
				f.maxFileBytes = tt.flags.maxFileBytes
			}
			c, err := f.resolve(tt.stateDir)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || c.dir != tt.dir || (tt.dir != "" && c.keyFile != tt.key) {
				t.Fatalf("resolved %+v %v", c, err)
			}
		})
	}
}

func TestReplicaName(t *testing.T) {
	for in, want := range map[string]string{"web-1.example.org": "web-1.example.org", "a b/c": "a-b-c", "": "sidecar", ".hidden": "hidden"} {
		if got := replicaName(in); got != want || audit.CheckReplica(got) != nil {
			t.Errorf("replicaName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSidecarLimitFlags(t *testing.T) {
	tests := []struct {
		name       string
		flags      sidecarLimitFlags
		bot, grant api.Rate
		err        string
	}{
		{name: "none"},
		{name: "bot rate, burst defaulted", flags: sidecarLimitFlags{botRate: 2.5}, bot: api.Rate{PerSecond: 2.5, Burst: 3}},
		{name: "both", flags: sidecarLimitFlags{botRate: 10, botBurst: 20, grantRate: 1, grantBurst: 5}, bot: api.Rate{PerSecond: 10, Burst: 20}, grant: api.Rate{PerSecond: 1, Burst: 5}},
		{name: "negative", flags: sidecarLimitFlags{botRate: -1}, err: "--bot-rate"},
		{name: "burst without rate", flags: sidecarLimitFlags{grantBurst: 3}, err: "--grant-burst needs --grant-rate"},
		{name: "negative cap", flags: sidecarLimitFlags{grantBytes: -1}, err: "--grant-max-bytes must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg sidecar.Config
			err := tt.flags.apply(&cfg)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || cfg.BotRate != tt.bot || cfg.GrantRate != tt.grant {
				t.Fatalf("bot %+v grant %+v (%v), want %+v %+v", cfg.BotRate, cfg.GrantRate, err, tt.bot, tt.grant)
			}
		})
	}
}
