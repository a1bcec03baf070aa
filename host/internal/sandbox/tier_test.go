package sandbox

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompileInBackground: with Config.CompileInBackground and no machine
// code cached, New returns with the guest on the interpreter; runs work
// there, the pool waits for the compiler's code, and once it is ready
// runs and the pool use it and the cache says so, so the next start
// compiles (from the cache) before it returns. Close during the compile
// ends it.
func TestCompileInBackground(t *testing.T) {
	ctx := context.Background()
	wasm := counterGuest()
	dir := t.TempDir()
	cfg := Config{Guest: wasm, GuestSum: sha256.Sum256(wasm), MemoryLimitPages: 16, Reset: true, PoolSize: 2,
		CacheDir: dir, CompileInBackground: true}
	marker := compiledMarker(dir, cfg.GuestSum)

	hold := make(chan struct{})
	held := cfg
	held.HoldCompile = hold
	r, err := New(ctx, held)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Tier(); got != TierInterpreter {
		t.Fatalf("tier %q while the compile is held, want %q", got, TierInterpreter)
	}
	for i := range 3 {
		if _, err := r.Run(ctx, Call{Input: []byte("{}")}); err != nil {
			t.Fatalf("run %d on the interpreter: %v", i, err)
		}
	}
	done := make(chan error, 1)
	r.StartBackground("", func() ([]Call, error) { return []Call{{Input: []byte("{}")}}, nil }, func(err error) { done <- err })
	if r.Pooled() {
		t.Fatal("the pool was built before the compiler's code")
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.WaitCompiled(canceled); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitCompiled while held: %v, want the context's error", err)
	}
	if fileExists(marker) {
		t.Fatal("the compiled marker exists before the compile")
	}
	close(hold)
	if err := <-done; err != nil {
		t.Fatalf("pool after the compile: %v", err)
	}
	if err := r.WaitCompiled(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.Tier(); got != TierCompiler || !r.Pooled() {
		t.Fatalf("after the compile: tier %q, pooled %v; want %q and the pool", got, r.Pooled(), TierCompiler)
	}
	if _, err := r.Run(ctx, Call{Input: []byte("{}")}); err != nil {
		t.Fatalf("run on the pool: %v", err)
	}
	if !fileExists(marker) {
		t.Fatal("no compiled marker after the compile")
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !r.interp.closed {
		t.Fatal("the interpreter's runtime is open after Close")
	}

	// The next start finds the marker and compiles (from wazero's cache)
	// before New returns.
	r2, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := r2.Tier(); got != TierCompiler {
		t.Fatalf("tier %q with the code cached, want %q", got, TierCompiler)
	}
	r2.Close(ctx)

	// Without the marker the interpreter serves again; Close while the
	// compile is held ends it, and the interpreter's runtime is closed.
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	r3, err := New(ctx, Config{Guest: held.Guest, GuestSum: held.GuestSum, MemoryLimitPages: 16, Reset: true, PoolSize: 2,
		CacheDir: dir, CompileInBackground: true, HoldCompile: make(chan struct{})})
	if err != nil {
		t.Fatal(err)
	}
	if got := r3.Tier(); got != TierInterpreter {
		t.Fatalf("tier %q without the marker, want %q", got, TierInterpreter)
	}
	if err := r3.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r3.WaitCompiled(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitCompiled after Close during the compile: %v, want context.Canceled", err)
	}
	if !r3.interp.closed {
		t.Fatal("the interpreter's runtime is open after Close")
	}
}

// TestInterpreterOnly: Config.Interpreter keeps every run on a fresh
// interpreter instance: no pool even when asked for, no machine code, no
// marker.
func TestInterpreterOnly(t *testing.T) {
	ctx := context.Background()
	wasm := counterGuest()
	dir := t.TempDir()
	r, err := New(ctx, Config{Guest: wasm, GuestSum: sha256.Sum256(wasm), MemoryLimitPages: 16, Reset: true, PoolSize: 1,
		CacheDir: dir, Interpreter: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	if err := r.Start(ctx, "", func() ([]Call, error) { return []Call{{Input: []byte("{}")}}, nil }); err != nil {
		t.Fatal(err)
	}
	if r.Tier() != TierInterpreter || r.Pooled() {
		t.Fatalf("tier %q, pooled %v; want %q and no pool", r.Tier(), r.Pooled(), TierInterpreter)
	}
	if _, err := r.Run(ctx, Call{Input: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	if fileExists(compiledMarker(dir, sha256.Sum256(wasm))) {
		t.Fatal("a compiled marker without any machine code")
	}
}

// TestShutTierWaitsForRuns: a tier is closed only when no fresh run holds
// it, and a run that finds its tier shut takes the current one.
func TestShutTierWaitsForRuns(t *testing.T) {
	ctx := context.Background()
	wasm := counterGuest()
	r, err := New(ctx, Config{Guest: wasm, GuestSum: sha256.Sum256(wasm), MemoryLimitPages: 16, PoolSize: 1, Interpreter: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	old := r.freshTier() // a run holds the interpreter's tier
	next, err := newTier(ctx, TierInterpreter, 16, nil, mustPlan(t, wasm))
	if err != nil {
		t.Fatal(err)
	}
	r.tier.Store(next)
	shut := make(chan struct{})
	go func() { old.shut(); close(shut) }()
	// The shut cannot finish while the run holds the tier: this run
	// takes the new one.
	if got := r.freshTier(); got != next {
		t.Fatal("a run took the tier being shut")
	} else {
		got.mu.RUnlock()
	}
	select {
	case <-shut:
		t.Fatal("the tier was shut while a run held it")
	default:
	}
	old.mu.RUnlock() // the run ends
	<-shut
	if !old.closed {
		t.Fatal("the tier is not closed after its last run")
	}
	if _, err := r.Run(ctx, Call{Input: []byte("{}")}); err != nil {
		t.Fatalf("run after the shut: %v", err)
	}
	next.shut()
}

// mustPlan is the instrumented guest.
func mustPlan(t *testing.T, wasm []byte) []byte {
	t.Helper()
	p, err := planGuest(wasm)
	if err != nil {
		t.Fatal(err)
	}
	return p.wasm
}

// TestCompileInBackgroundCacheRefused: a cache directory wazero cannot
// use stops the start, as it does without the compile in the background
// (not a start that serves on the interpreter for good); and without a
// cache directory no marker, nor its temporary file, is written anywhere.
func TestCompileInBackgroundCacheRefused(t *testing.T) {
	ctx := context.Background()
	wasm := counterGuest()
	cfg := Config{Guest: wasm, GuestSum: sha256.Sum256(wasm), MemoryLimitPages: 16, PoolSize: 1, CompileInBackground: true}

	// wazero's own subdirectory of a cache directory, as a file.
	good := t.TempDir()
	cfg.CacheDir = good
	r, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WaitCompiled(ctx); err != nil {
		t.Fatal(err)
	}
	r.Close(ctx)
	ents, _ := os.ReadDir(good)
	sub := ""
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "wazero") {
			sub = e.Name()
		}
	}
	if sub == "" {
		t.Fatalf("no wazero directory in the cache: %v", ents)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, sub), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.CacheDir = bad
	if r, err := New(ctx, cfg); err == nil {
		r.Close(ctx)
		t.Fatalf("New with %s a file: no error (tier %q)", sub, r.Tier())
	} else if !errors.Is(err, ErrCacheDir) || !strings.Contains(err.Error(), "remove what is in the way") {
		t.Fatalf("New with %s a file: %v; want ErrCacheDir saying what to do", sub, err)
	}

	cwd, _ := os.Getwd()
	tmps := func() (n int) {
		ents, _ := os.ReadDir(cwd)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".tmp-") {
				n++
			}
		}
		return n
	}
	before := tmps()
	cfg.CacheDir = ""
	r, err = New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WaitCompiled(ctx); err != nil {
		t.Fatal(err)
	}
	r.Close(ctx)
	if after := tmps(); after != before || compiledMarker("", cfg.GuestSum) != "" {
		t.Fatalf("without a cache directory: %d temporary files in %s, before %d", after, cwd, before)
	}
}
