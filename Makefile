# pinned — see README.md. `make demo` and `make test` do all set-up.
GO        ?= go
FUZZTIME  ?= 10s
BENCHTIME ?= 1s
BENCHCOUNT ?= 6

# VERSION is stamped into bin/pinned (pinned version).
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
PREFIX    ?= /usr/local
DESTDIR   ?=
UNITDIR   ?= /etc/systemd/system

# Checkers for `make check`, pinned. `go run pkg@version` builds each at
# exactly the dependency set its authors released (its own go.mod),
# verified against the checksum database, fetched through the Go module
# proxy and cached in the build cache: no tools module to keep tidy, no
# binaries committed, nothing installed on PATH.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOVULNCHECK ?= golang.org/x/vuln/cmd/govulncheck@v1.9.0
# GOOS values besides linux that everything must build (and vet) for; off
# Linux the host refuses the reset strategy and runs fresh instances.
CROSS_GOOS ?= darwin windows

# The guest is built reproducibly: no paths, no VCS stamp, no build id.
WASMFLAGS := -trimpath -buildvcs=false -ldflags="-s -w -buildid=" -buildmode=c-shared
GUEST_SRC := $(shell find guest/wasm guest/executor internal/abi internal/argrules internal/jsonv -name '*.go' -not -name '*_test.go')
HOSTILE   := $(patsubst %/main.go,%.wasm,$(wildcard host/testdata/hostile/*/main.go))

.PHONY: all guest hostile build install walkthrough test ts-client demo bench bench-scale check fuzz clean web web-vendor axe-vendor snapshot

all: build

## guest: rebuild the executor module (guest/executor.wasm) from source.
guest: guest/executor.wasm
guest/executor.wasm: $(GUEST_SRC)
	GOOS=wasip1 GOARCH=wasm $(GO) build $(WASMFLAGS) -o $@ ./guest/wasm
	sha256sum $@ | cut -d' ' -f1 > $@.sha256

## hostile: rebuild the hostile test guests from host/testdata/hostile/*/main.go.
hostile: $(HOSTILE)
host/testdata/hostile/%.wasm: host/testdata/hostile/%/main.go $(wildcard host/testdata/hostile/hpin/*) $(GUEST_SRC)
	GOOS=wasip1 GOARCH=wasm $(GO) build $(WASMFLAGS) -o $@ ./host/testdata/hostile/$*

## snapshot: rewrite registry/snapshot.json (the canonical archive of
## registry/manifests; its version bumped when they changed) and sign it
## with REGISTRY_KEY (default: the development key, which only the in-tree
## snapshot uses; a release signs with the registry's offline key).
REGISTRY_KEY ?= registry/snapshot/testdata/dev.key
snapshot:
	$(GO) run ./cmd/pinned registry snapshot registry/manifests -o registry/snapshot.json
	$(GO) run ./cmd/pinned registry sign --key $(REGISTRY_KEY) registry/snapshot.json

## build: the one binary, bin/pinned (guest and registry embedded).
build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/pinned ./cmd/pinned

## install: bin/pinned to $(PREFIX)/bin, the systemd unit to $(UNITDIR), bash
## completion; DESTDIR for packaging (make install DESTDIR=/tmp/pkg).
install: build
	install -D -m 0755 bin/pinned $(DESTDIR)$(PREFIX)/bin/pinned
	install -D -m 0644 deploy/pinned-sidecar.service $(DESTDIR)$(UNITDIR)/pinned-sidecar.service
	install -d -m 0755 $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	bin/pinned completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/pinned
	@echo "installed; then: install -d -m 0700 /etc/pinned, put bot.key and caller.token there (mode 0600), systemctl enable --now pinned-sidecar"
	@if [ -n "$(DESTDIR)" ]; then \
	  echo "DESTDIR install: systemd-analyze verify fails on $(DESTDIR)$(UNITDIR)/pinned-sidecar.service because its ExecStart, $(PREFIX)/bin/pinned, is not installed outside $(DESTDIR); verify a copy that points at the staged binary:"; \
	  echo "  sed 's#$(PREFIX)/bin/pinned#$(DESTDIR)$(PREFIX)/bin/pinned#' $(DESTDIR)$(UNITDIR)/pinned-sidecar.service > /tmp/pinned-sidecar.service && systemd-analyze verify /tmp/pinned-sidecar.service"; \
	fi

## walkthrough: run the command blocks of README, docs/OAUTH.md and docs/OPERATING.md (replicas) as written
## (also part of make test).
walkthrough:
	$(GO) test -count=1 -run 'TestWalkthroughs' ./cmd/pinned/

## test: every test, with the race detector. Prints go test's lines, then
## one line for every skipped test with its reason (also without -v), and
## the slowest packages (internal/cmd/testreport). Uses the committed .wasm
## files; on the toolchain they were built with (guest.GoVersion)
## TestWasmUpToDate and TestHostileUpToDate fail if they are stale, on
## another they skip and say so.
# go test's limit per package: generous, so a busy machine makes a package
# slow, not failed.
TESTTIMEOUT ?= 20m
# go vet runs in make check (every package, every check), which CI runs
# first; go test's own vet subset would redo it per test binary.
TESTVET ?= off
# The slowest packages go first: go test starts packages in the order
# given, -p at a time, and a long one started last would run alone.
TESTFIRST ?= ./host/ ./cmd/pinned/ ./sidecar/ ./web/ ./broker/ ./mcpserver/
# The TypeScript SDK client, installed once per lockfile change where npm
# is on PATH (TestTypeScriptClient says when it is missing).
TSCLIENT := cmd/pinned/testdata/tsclient
TSDEP := $(if $(shell command -v npm),$(TSCLIENT)/node_modules/.package-lock.json)

$(TSCLIENT)/node_modules/.package-lock.json: $(TSCLIENT)/package-lock.json
	npm ci --prefix $(TSCLIENT) --no-audit --no-fund --ignore-scripts

test: $(TSDEP)
	$(GO) run ./internal/cmd/testreport -- $(GO) test -json -race -count=1 -vet=$(TESTVET) -timeout $(TESTTIMEOUT) $(TESTFIRST) ./...

## ts-client: install the official MCP TypeScript SDK client that
## TestTypeScriptClient drives (npm, from the committed lockfile).
ts-client:
	npm ci --prefix $(TSCLIENT) --no-audit --no-fund --ignore-scripts

## demo: run a viewer and a list op of every service against the local provider fake.
demo: build
	./bin/pinned demo

## web: the member's catalog and the GitHub app against the local fakes
## (provider fake, broker, sidecar and pinned web in one process), on a free
## port; it prints the URL. WEBLISTEN=127.0.0.1:8090 keeps one origin.
WEBLISTEN ?= 127.0.0.1:0
web: build
	./bin/pinned demo --web --listen $(WEBLISTEN)

## web-vendor: refresh the browser crypto (libsodium-wrappers, ISC) in
## web/static/vendor/ through npm, and record versions and SHA-256 in
## web/static/vendor/VENDOR (TestVendoredSHA256 checks them).
SODIUM_VERSION ?= 0.8.4
web-vendor:
	rm -rf .web-vendor && mkdir -p .web-vendor web/static/vendor
	cd .web-vendor && npm pack --silent libsodium@$(SODIUM_VERSION) libsodium-wrappers@$(SODIUM_VERSION) >/dev/null
	cd .web-vendor && for p in libsodium libsodium-wrappers; do \
	  mkdir -p $$p && tar xzf $$p-$(SODIUM_VERSION).tgz -C $$p && \
	  cp $$p/package/dist/modules/$$p.js ../web/static/vendor/$$p.js && \
	  cp $$p/package/LICENSE ../web/static/vendor/$$p.LICENSE; done
	{ echo "# Vendored browser crypto: refreshed by 'make web-vendor' (npm pack from the npm registry)."; \
	  echo "# package version file sha256"; \
	  for p in libsodium libsodium-wrappers; do \
	    echo "$$p $(SODIUM_VERSION) $$p.js $$(sha256sum web/static/vendor/$$p.js | cut -d' ' -f1)"; done; } > web/static/vendor/VENDOR
	rm -rf .web-vendor

## axe-vendor: refresh axe-core (MPL-2.0), the accessibility checker the
## browser tests run, in web/testdata/axe/ through npm, and record its
## version and SHA-256 in web/testdata/axe/VENDOR (TestAxeVendored checks
## them). Test-only: it is not embedded in the binary.
AXE_VERSION ?= 4.14.1
axe-vendor:
	rm -rf .axe-vendor && mkdir -p .axe-vendor web/testdata/axe
	cd .axe-vendor && npm pack --silent axe-core@$(AXE_VERSION) >/dev/null && tar xzf axe-core-$(AXE_VERSION).tgz
	cp .axe-vendor/package/axe.min.js web/testdata/axe/axe.min.js
	cp .axe-vendor/package/LICENSE web/testdata/axe/axe-core.LICENSE
	cp .axe-vendor/package/LICENSE-3RD-PARTY.txt web/testdata/axe/axe-core.LICENSE-3RD-PARTY.txt
	{ echo "# Vendored accessibility checker for the browser tests: refreshed by 'make axe-vendor' (npm pack from the npm registry)."; \
	  echo "# package version file sha256"; \
	  echo "axe-core $(AXE_VERSION) axe.min.js $$(sha256sum web/testdata/axe/axe.min.js | cut -d' ' -f1)"; } > web/testdata/axe/VENDOR
	rm -rf .axe-vendor

## bench: benchmarks and harnesses, written to docs/BENCHMARKS.md (see
## that file; ratios are against baselines measured in the same run).
bench: build
	@# Start times first: on a VM that reports freed memory to its host, a
	@# start right after a memory-heavy run (benchtool rss) faults its pages
	@# in again at the host and took 1.4x as long.
	$(GO) run ./internal/cmd/benchtool ready -bin bin/pinned -out ready.json
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) ./host/ | tee bench.out
	$(GO) test -run='^$$' -bench='^BenchmarkSandbox$$/^reset$$' -benchtime=100000x -cpuprofile=sandbox.prof -o sandbox.test ./host/ > sandbox-profile.txt
	$(GO) tool pprof -top -cum -nodecount=400 sandbox.test sandbox.prof >> sandbox-profile.txt
	$(GO) test -run='^$$' -bench='^(BenchmarkReset|BenchmarkPageFault)$$' -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) ./host/internal/sandbox/ | tee -a bench.out
	$(GO) test -run='^$$' -bench='^BenchmarkProject$$' -benchmem -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) ./host/internal/pick/ | tee -a bench.out
	$(GO) test -run='^$$' -bench='^BenchmarkFlow$$' -benchmem -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) ./internal/flow/ | tee -a bench.out
	$(GO) test -run='^$$' -bench='^(BenchmarkStateRecord|BenchmarkStateOverhead|BenchmarkReplicas|BenchmarkAuditOverhead)$$' -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) ./sidecar/ | tee -a bench.out
	$(GO) test -run='^$$' -bench='^(BenchmarkAppend|BenchmarkSeal)$$' -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) ./internal/audit/ | tee -a bench.out
	@if [ -f bench/extism/go.mod ]; then \
	  (cd bench/extism && $(GO) test -run='^$$' -bench=. -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) .) | tee bench-extism.out; \
	else : > bench-extism.out; fi
	$(GO) run ./internal/cmd/benchtool rss -out rss.json
	GO="$(GO)" BENCHTIME=$(BENCHTIME) COUNT=3 OUT=bench-scale.md sh bench/scale.sh
	@# The executor as committed, but with its function names (no -s).
	GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -buildvcs=false -ldflags="-w -buildid=" -buildmode=c-shared -o guest-named.wasm ./guest/wasm
	$(GO) run ./internal/cmd/benchtool guestsize -wasm guest-named.wasm -out guest-size.md
	$(GO) run ./internal/cmd/benchtool report -bench bench.out -extism bench-extism.out -rss rss.json -ready ready.json -scale bench-scale.md -profile sandbox-profile.txt -guestsize guest-size.md -out docs/BENCHMARKS.md

## bench-scale: sandboxed and native throughput at 1, 2, 4, ... cores up to
## the machine's (BenchmarkThroughput, the provider in a process of its own
## on other cores where there are enough), with the machine described; a
## Markdown table on stdout and in bench-scale.md. Run it on a bigger machine.
bench-scale:
	GO="$(GO)" BENCHTIME=$(BENCHTIME) sh bench/scale.sh

## check: the CI contract (.ci/run runs `make check test`): the toolchain
## first (go.mod's toolchain line, which the committed modules are built
## with), formatting, a tidy go.mod, vet, builds and vet for $(CROSS_GOOS),
## staticcheck, govulncheck (database: see .ci/govulncheck), and the
## committed modules rebuilt byte for byte, and the embedded registry
## snapshot up to date and verified (make snapshot).
TOOLCHAIN := $(shell sed -n 's/^toolchain //p' go.mod)
check:
	@have=$$($(GO) env GOVERSION); [ "$$have" = "$(TOOLCHAIN)" ] || { \
	  echo "make check: the go command runs $$have; the committed .wasm files are built with $(TOOLCHAIN) (go.mod) and make check rebuilds them byte for byte."; \
	  echo "Run: GOTOOLCHAIN=$(TOOLCHAIN) make check  (the go command fetches $(TOOLCHAIN) and verifies it)"; exit 1; } >&2
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || (echo "gofmt: files above need formatting (gofmt -w)" && exit 1)
	@$(GO) mod tidy -diff || (echo "go.mod/go.sum are not tidy: run go mod tidy" && exit 1)
	$(GO) vet ./...
	@set -e; for os in $(CROSS_GOOS); do \
	  echo "GOOS=$$os $(GO) build ./... && $(GO) vet ./..."; \
	  GOOS=$$os $(GO) build ./... && GOOS=$$os $(GO) vet ./...; \
	done
	$(GO) run $(STATICCHECK) ./...
	GO=$(GO) GOVULNCHECK=$(GOVULNCHECK) .ci/govulncheck ./...
	PINNED_REPRODUCIBLE=1 $(GO) test -count=1 -run '^(TestWasmUpToDate|TestHostileUpToDate)$$' ./guest/ ./host/
	$(GO) run ./cmd/pinned registry snapshot registry/manifests -o registry/snapshot.json --check
	$(GO) run ./cmd/pinned registry verify --pubkey registry/snapshot.pub registry/snapshot.json --dir registry/manifests

## fuzz: run every fuzzer (every func FuzzXxx in a _test.go) for FUZZTIME each.
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '^./bench/' | sort); do \
	  d=$$(dirname $$f); \
	  for n in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
	    echo "== $$d $$n"; \
	    $(GO) test -run='^$$' -fuzz="^$$n\$$" -fuzztime=$(FUZZTIME) $$d/; \
	  done; \
	done

clean:
	rm -rf bin bench.out bench-extism.out rss.json ready.json sandbox.prof sandbox.test sandbox-profile.txt
