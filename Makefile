# canaryd's tasks. `make demo` and `make test` are the README's two commands;
# both install what they need on a Debian machine (as root) and say what to
# install otherwise.

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEADCODE    ?= golang.org/x/tools/cmd/deadcode@v0.52.0
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT      ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS     := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
FUZZTIME    ?= 10s

export CGO_ENABLED ?= 0

.PHONY: all build dist test unit lint deadcode fuzz demo bench bench-once prometheus xmllint postgresql chromium scipy clean docs judge-bench

all: build

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/canaryd ./cmd/canaryd

# dist builds a release into DIST: for each of DIST_TARGETS (OS/ARCH), the
# archive canaryd_VERSION_OS_ARCH.tar.gz holding the static binary, its SPDX
# 2.3 SBOM canaryd_VERSION_OS_ARCH.spdx.json (internal/sbom/writesbom, from
# the binary's build information), and SHA256SUMS over all of them
# (`sha256sum -c`). The version is the tag's (git describe), the times the
# commit's, so a rebuild of a tag gives the same files. GNU tar and
# coreutils' sha256sum: run it on Linux (the release workflow does).
# docs/releases.md describes the release.
DIST         ?= dist
DIST_TARGETS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || date +%s)

dist:
	@set -e; rm -rf "$(DIST)"; mkdir -p "$(DIST)"; \
	for target in $(DIST_TARGETS); do \
		os=$${target%/*}; arch=$${target#*/}; name=canaryd_$(VERSION)_$${os}_$${arch}; \
		echo "dist $$name"; \
		mkdir -p "$(DIST)/$$name"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o "$(DIST)/$$name/canaryd" ./cmd/canaryd; \
		SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./internal/sbom/writesbom -name "$$name" \
			-version "$(VERSION)" -commit "$(COMMIT)" -o "$(DIST)/$$name.spdx.json" "$(DIST)/$$name/canaryd"; \
		tar -C "$(DIST)/$$name" --sort=name --mtime=@$(SOURCE_DATE_EPOCH) --owner=0 --group=0 --numeric-owner \
			-cf - canaryd | gzip -9n > "$(DIST)/$$name.tar.gz"; \
		rm -r "$(DIST)/$$name"; \
	done; \
	cd "$(DIST)" && sha256sum *.tar.gz *.spdx.json > SHA256SUMS && cat SHA256SUMS

# need, given commands, the Debian package that has them and, optionally,
# where they are besides PATH, makes sure the commands are there: installed
# with apt-get when missing and we are root, else it says what to install.
define need
	@PATH="$$PATH$(foreach d,$(3),:$$(echo $(d) | tr ' ' ':'))"; \
	for c in $(1); do command -v $$c >/dev/null 2>&1 || missing=1; done; [ -z "$$missing" ] && exit 0; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's $(2) package ($(1))"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null; \
	else \
		echo "$(1) needed: run 'sudo apt-get install -y $(2)'" >&2; exit 1; \
	fi
endef

# prometheus: the integration tests, the end-to-end tests and the demo run a
# real Prometheus.
prometheus:
	$(call need,prometheus promtool,prometheus)

# xmllint: the JUnit output of canaryd run -o junit is validated against the
# JUnit schema with libxml2's xmllint.
xmllint:
	$(call need,xmllint,libxml2-utils)

# chromium: the browser tests (internal/browsertest) open canaryd's HTML
# report, offline, in Debian's headless Chromium.
chromium:
	$(call need,chromium,chromium)

# postgresql: the store's tests and canaryd migrate's run a throwaway
# PostgreSQL cluster (internal/pgtest) from Debian's binaries, which are not
# on PATH: /usr/lib/postgresql/VERSION/bin.
postgresql:
	$(call need,initdb postgres,postgresql,/usr/lib/postgresql/*/bin)

# scipy: internal/judge's oracle tests recompute the count judge's e-values
# with Debian's Python and its python3-scipy (and python3-numpy).
scipy:
	@/usr/bin/python3 -c 'import scipy, numpy' 2>/dev/null && exit 0; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's python3-scipy package"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-scipy python3-numpy >/dev/null; \
	else \
		echo "python3-scipy needed: run 'sudo apt-get install -y python3-scipy python3-numpy'" >&2; exit 1; \
	fi

# test runs everything: lint, every test with the race detector (real
# Prometheus and PostgreSQL included, nothing skipped), the test that
# compares the providers' allocations again without it (the race detector
# allocates for itself), a short run of each fuzz target.
test: prometheus xmllint postgresql chromium scipy lint
	CGO_ENABLED=1 $(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run '^TestMeasureCost$$' ./internal/benchmark/
	cd deploy && $(GO) test -count=1 ./...
	cd test && CGO_ENABLED=1 $(GO) test -race -count=1 ./...
	$(MAKE) --no-print-directory fuzz
	$(MAKE) --no-print-directory demo

unit:
	$(GO) test -count=1 ./...

# docs regenerates what docs/ generates from the code: the configuration
# reference, docs/configuration.md, from internal/config's table of settings,
# and the package map of docs/developing.md from each package's doc comment
# (internal/archtest).
docs:
	$(GO) generate ./internal/config
	$(GO) run ./internal/archtest/pkgmap

lint:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@$(MAKE) --no-print-directory deadcode
	@$(GO) mod tidy -diff >/dev/null 2>&1 || { echo "go.mod is not tidy: run 'go mod tidy'"; $(GO) mod tidy -diff; exit 1; }
	cd deploy && $(GO) vet ./... && $(GO) mod tidy -diff
	cd test && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./... && $(GO) mod tidy -diff

# deadcode fails on a function that nothing reaches, from the commands or
# from the tests: delete it. DEADCODE_KNOWN lists those found today
# (package, relative to the module, and function), each on its way out with
# the work that holds it; the list may only shrink, and a function listed
# that deadcode no longer finds fails too, so that it is kept exact.
DEADCODE_KNOWN :=

deadcode:
	@out="$$($(GO) run $(DEADCODE) -test -f '{{range .Funcs}}{{$$.Path}}.{{.Name}}{{"\n"}}{{end}}' ./...)" || exit 1; \
	found=" $$(echo $$out | sed 's|github.com/canaryd/canaryd/||g') "; known=" $(strip $(DEADCODE_KNOWN)) "; new=; gone=; \
	for f in $$found; do case "$$known" in *" $$f "*) ;; *) new="$$new $$f";; esac; done; \
	for k in $$known; do case "$$found" in *" $$k "*) ;; *) gone="$$gone $$k";; esac; done; \
	[ -z "$$new" ] || echo "deadcode: nothing reaches these functions; delete them:$$new"; \
	[ -z "$$gone" ] || echo "deadcode: these are reached or gone now; take them off DEADCODE_KNOWN:$$gone"; \
	[ -z "$$new$$gone" ]

# fuzz runs each fuzz target briefly; FUZZTIME=10m make fuzz for a long run.
# Go 1.26's fuzzing coordinator can end a run that found nothing with a bare
# "context deadline exceeded" when -fuzztime runs out on a busy machine
# (golang/go#75804, fixed in Go 1.27): such a run, with no failing input
# written, is run once more; any other failure fails at once.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			for try in 1 2; do \
				echo "fuzz $$pkg $$target ($(FUZZTIME))"; \
				if out=$$($(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg 2>&1); then break; fi; \
				if [ $$try = 1 ] && ! echo "$$out" | grep -q 'Failing input written' && \
					{ echo "$$out" | grep -q 'context deadline exceeded' || ! echo "$$out" | grep -q '^--- FAIL'; }; then \
					echo "$$out" | tail -n 3; echo "fuzz: the fuzzing engine failed without a failing input (golang/go#75804's deadline race, or a bare exit status): once more"; continue; \
				fi; \
				echo "$$out" | tail -n 60; exit 1; \
			done; \
		done; \
	done

demo: prometheus build
	./deploy/demo/demo.sh

# bench runs the benchmarks behind docs/performance.md (about
# twenty minutes) and writes what they print to bench.txt: the conditions
# beside compiling them per measurement, the judge's statistics, canaryd judge on a million looks, a day's backtest (the engine alone,
# and against a real Prometheus), the engine's scheduler alone and a
# million analyses in-process on it (about three minutes), /v1/evaluate beside the same query sent
# straight to Prometheus and through a do-nothing proxy, one measurement
# of each provider against a stand-in of its backend, and beside Argo's
# InfluxDB and New Relic providers on their official clients, 10,000
# concurrent analyses (conditions compiled per analysis or shared, and
# shared under a memory-driven GC), 100,000 analyses created through
# POST /v1/analyses on a canaryd serve process of their own (about five
# minutes), each variant in a process of its own so
# that none inherits another's memory, 1,000 analyses on three replicas
# and one PostgreSQL with one replica SIGKILLed, and 10,000 analyses at 10 s
# intervals on three replicas and one PostgreSQL (group commit, about three
# minutes). Every section is headed by
# the load average: other work on the machine shows in the numbers, so run
# it on a quiet one.
BENCH_OUT ?= bench.txt
# BENCH_ONCE, when set, is added to every benchmark's command line (make
# bench-once sets it to -benchtime 1x).
BENCH_ONCE ?=

bench: prometheus postgresql
	@set -e; out="$(BENCH_OUT)"; \
	{ echo "# canaryd benchmarks, $$(date -u +%Y-%m-%dT%H:%M:%SZ), $$(git describe --always --dirty 2>/dev/null || echo unknown)"; \
	  echo "# $$($(GO) version), $$(nproc) CPUs: $$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"; } > "$$out"; \
	run() { \
		echo "== $$*"; \
		{ echo; echo "== $$*"; echo "# load average $$(cut -d' ' -f1-3 /proc/loadavg)"; } >> "$$out"; \
		"$$@" >> "$$out" 2>&1 || { echo "failed; see $$out" >&2; exit 1; }; \
	}; \
	run $(GO) test -run '^$$' -bench . -benchmem ./internal/condition/ $(BENCH_ONCE); \
	run $(GO) test -run '^$$' -bench . -benchmem ./internal/judge/ $(BENCH_ONCE); \
	run $(GO) test -run '^$$' -bench BacktestDay -benchmem ./internal/analysis/ $(BENCH_ONCE); \
	run $(GO) test -run '^$$' -bench 'Scheduler$$' -benchmem ./internal/analysis/ $(BENCH_ONCE); \
	run $(GO) test -run '^$$' -bench MillionAnalyses -benchtime 1x -timeout 30m ./internal/analysis/ $(BENCH_ONCE); \
	run $(GO) test -run '^$$' -bench BacktestDay -benchmem -benchtime 3x ./cmd/canaryd/ $(BENCH_ONCE); \
	run $(GO) test -run '^$$' -bench JudgeLooks -benchtime 1x -cpu 1 ./cmd/canaryd/ $(BENCH_ONCE); \
	run $(GO) test -run '^$$' -bench EvaluateVsDirect -benchtime 1x ./internal/benchmark/ $(BENCH_ONCE); \
	run $(GO) test -run '^$$' -bench EvaluateInProcess -benchmem -benchtime 2000x ./internal/benchmark/ $(BENCH_ONCE); \
	run $(GO) test -run '^$$' -bench 'MeasureOneValue|Measure$$' -benchmem -count 3 ./internal/benchmark/ $(BENCH_ONCE); \
	run $(GO) -C test test -run '^$$' -bench ArgoMeasure -benchmem -count 3 ./argo/ $(BENCH_ONCE); \
	run $(GO) test -run '^$$' -bench 'ConcurrentAnalyses/programs=each$$' -benchtime 1x ./internal/benchmark/ $(BENCH_ONCE); \
	run $(GO) test -run '^$$' -bench 'ConcurrentAnalyses/programs=shared$$' -benchtime 1x ./internal/benchmark/ $(BENCH_ONCE); \
	run env GOGC=off GOMEMLIMIT=512MiB $(GO) test -run '^$$' -bench 'ConcurrentAnalyses/programs=shared$$' -benchtime 1x ./internal/benchmark/ $(BENCH_ONCE); \
	run $(GO) test -run '^$$' -bench ServeAnalyses -benchtime 1x -timeout 30m ./internal/benchmark/ $(BENCH_ONCE); \
	run $(GO) test -run '^$$' -bench Ledger -benchtime 1x ./internal/analyses/ $(BENCH_ONCE); \
	run $(GO) test -run '^$$' -bench StoreReplicas -benchtime 1x ./cmd/canaryd/ $(BENCH_ONCE); \
	run $(GO) test -run '^$$' -bench StoreScale -benchtime 1x -timeout 30m ./cmd/canaryd/ $(BENCH_ONCE); \
	echo "results in $$out"

# judge-bench runs the open canary benchmark (internal/canarybench): every
# method on 4,800 generated cases, 2,160 of them A/A, and prints the tables
# of docs/judge.md (about a minute). JUDGE_BENCH_SCALE=1 scores the
# published set alone.
JUDGE_BENCH_SCALE ?= 12
judge-bench:
	$(GO) run ./internal/canarybench/judgebench -scale $(JUDGE_BENCH_SCALE)

# bench-once runs every benchmark of make bench once, with small
# populations (about two minutes): it shows that they all still run; the
# figures it writes mean nothing.
bench-once:
	@out="$$(mktemp)"; trap 'rm -f "$$out"' EXIT; \
	CANARYD_BENCH_PAIRS=20 CANARYD_BENCH_ANALYSES=100 CANARYD_BENCH_COUNT=2 CANARYD_BENCH_SERVE_ANALYSES=100 CANARYD_BENCH_SERVE_INTERVAL=2s CANARYD_BENCH_STORE_ANALYSES=20 CANARYD_BENCH_STORE_SCALE_ANALYSES=30 CANARYD_BENCH_STORE_SCALE_SECONDS=10 CANARYD_BENCH_JUDGE_LOOKS=1000 CANARYD_BENCH_SCHED_ANALYSES=1000 CANARYD_BENCH_SCHED_DURATION=2s CANARYD_BENCH_SCHED_INTERVAL=500ms \
		$(MAKE) --no-print-directory bench BENCH_OUT="$$out" BENCH_ONCE='-benchtime 1x' || { cat "$$out"; exit 1; }

clean:
	rm -rf bin dist .demo bench.txt
