# collectiveattr: build, test, demo. Needs only Go: every tool is installed from the Go
# module proxy into .tools/ on first use.
#
#   make demo    build the demo collector, run a simulated 16-rank job through it, show results
#   make test    unit, race, conformance and end-to-end tests (builds the collector first)

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO          ?= go
TOOLS       := $(CURDIR)/.tools
OCB_VERSION := v0.165.0
OCB         := $(TOOLS)/builder
MDATAGEN    := $(TOOLS)/mdatagen
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(TOOLS)/staticcheck

OTELCOL := build/otelcol-collectiveattr
# The demo's distribution (builder-config-demo.yaml): only the components make demo runs.
# Its sources are committed (ocb's output with a logger-only telemetry factory, see
# cmd/otelcol-collectiveattr-demo/generate.sh), so that a first make demo needs neither ocb
# nor the modules ocb's `go mod tidy` fetches.
OTELCOL_DEMO     := build/otelcol-collectiveattr-demo
OTELCOL_DEMO_SRC := cmd/otelcol-collectiveattr-demo
# The floor processor's collector (e2e/floorcol), for make bench-pipeline PIPELINE_FLOOR=1 only:
# its own module, so that the root module does not require the distribution's modules.
OTELCOL_FLOOR     := build/otelcol-floor
OTELCOL_FLOOR_SRC := e2e/floorcol/otelcol-floor
# The repository packages the collector binary is built from (the processor and what it
# imports), so that editing a test, the simulator or the CLI does not relink the collector.
PROCESSOR_DIRS    := $(shell $(GO) list -deps -f '{{if not .Standard}}{{.Dir}}{{end}}' ./collectiveattrprocessor 2>/dev/null | grep '^$(CURDIR)/')
PROCESSOR_SOURCES := $(filter-out %_test.go,$(wildcard $(addsuffix /*.go,$(PROCESSOR_DIRS)))) $(wildcard collectiveattrprocessor/metadata.yaml)

# Deployment adds its CI targets (test-deploy, test-viewers) to DEPLOY_CI_TARGETS.
DEPLOY_CI_TARGETS ?=
-include deploy/deploy.mk

# go test flags; FUZZTIME is per fuzz target, BENCHTIME per benchmark. FUZZMINIMIZE bounds
# the minimisation of each new interesting input: at go's default (60 s) FuzzPipelines, whose
# inputs are whole OTLP requests run through shutdown, spends its run minimising instead of
# fuzzing (about 20 executions a minute instead of 5 000 a second). The timeout is per
# package: go's 10 min default cuts the e2e and processor packages short on a slow machine.
TESTFLAGS ?= -count=1 -timeout 30m
FUZZTIME  ?= 10s
FUZZMINIMIZE ?= 100x
BENCHTIME ?= 1s

.PHONY: all build collector cli tools generate test test-unit test-quality demo demo-sources check-demo-sources bench bench-scale bench-cli fuzz lint fmt-check vet staticcheck ci clean

all: build

## build: the collector distribution (ocb) plus bin/collectiveattr and bin/gpujobsim
build: $(OTELCOL) cli

collector: $(OTELCOL)

$(OCB):
	GOBIN=$(TOOLS) $(GO) install go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)

# ocb resolves the processor's `path: ./` against the working directory: run it from here.
$(OTELCOL): $(OCB) builder-config.yaml go.mod go.sum $(PROCESSOR_SOURCES)
	$(OCB) --config builder-config.yaml
	@touch $@

$(OTELCOL_FLOOR): $(wildcard $(OTELCOL_FLOOR_SRC)/*.go) $(OTELCOL_FLOOR_SRC)/go.mod $(OTELCOL_FLOOR_SRC)/go.sum $(filter-out %_test.go,$(wildcard e2e/floorcol/*.go)) go.mod go.sum $(PROCESSOR_SOURCES)
	cd $(OTELCOL_FLOOR_SRC) && $(GO) build -o $(CURDIR)/$@ .

$(OTELCOL_DEMO): $(wildcard $(OTELCOL_DEMO_SRC)/*.go) $(OTELCOL_DEMO_SRC)/go.mod $(OTELCOL_DEMO_SRC)/go.sum go.mod go.sum $(PROCESSOR_SOURCES)
	cd $(OTELCOL_DEMO_SRC) && $(GO) build -o $(CURDIR)/$@ .

## demo-sources: regenerate the demo collector's sources from builder-config-demo.yaml
demo-sources: $(OCB)
	bash $(OTELCOL_DEMO_SRC)/generate.sh $(OCB) $(OTELCOL_DEMO_SRC)

## check-demo-sources: fail when the committed demo sources are not what demo-sources writes
check-demo-sources: $(OCB)
	rm -rf build/otelcol-collectiveattr-demo-check
	bash $(OTELCOL_DEMO_SRC)/generate.sh $(OCB) build/otelcol-collectiveattr-demo-check
	diff -r -x generate.sh $(OTELCOL_DEMO_SRC) build/otelcol-collectiveattr-demo-check \
	  || { echo "the demo sources are stale: run make demo-sources" >&2; exit 1; }

cli:
	$(GO) build -o bin/collectiveattr ./cmd/collectiveattr
	$(GO) build -o bin/gpujobsim ./cmd/gpujobsim

## generate: regenerate the processor's metadata code with mdatagen (tools module)
$(MDATAGEN): internal/tools/go.mod internal/tools/go.sum
	cd internal/tools && $(GO) build -o $(MDATAGEN) go.opentelemetry.io/collector/cmd/mdatagen

generate: $(MDATAGEN)
	$(GO) generate ./collectiveattrprocessor/...

## test: every test of the root module with -race, the end-to-end tests against the built
## collector included (they find it through COLLECTIVEATTR_OTELCOL), then the quality
## evaluation without it (test-quality)
test: build
	COLLECTIVEATTR_OTELCOL=$(CURDIR)/$(OTELCOL) $(GO) test -race $(TESTFLAGS) ./...
	$(MAKE) test-quality

## test-unit: the same without the collector build (end-to-end tests skip)
test-unit:
	$(GO) test -race $(TESTFLAGS) ./...
	$(MAKE) test-quality

## test-quality: the quality goals on every family and preset, and the CLI = processor
## equality on every quality family, without -race: slow under it, they skip or compare a few
## families there (internal/racebuild); the engines' goroutines are raced in their packages' and
## the processor's own tests
QUALITY_TESTS := Goals|Quality|Findings|IgnoresNCCLStats|EqualsBatch|OpsSharingSequenceNumbers
test-quality:
	$(GO) test $(TESTFLAGS) -run '$(QUALITY_TESTS)' ./internal/quality/ ./collectiveattrprocessor/

## test-report: the HTML report loaded in headless Chromium (Debian's chromium package):
## DOM checks, console errors, render time and screenshots in $(REPORT_OUT). Not in CI (slow);
## REPORT_LARGE=1 adds the 1 024 ranks x 3 000 samples job and its 3 s render bound, and the
## report's 500 MB peak-RSS bound on a 64-rank x 10 min job (TestReportMemory, no browser).
CHROMIUM   ?= $(shell command -v chromium 2>/dev/null)
REPORT_OUT ?= $(CURDIR)/.report-test
.PHONY: test-report
test-report:
	@[ -n "$(CHROMIUM)" ] || { echo "test-report needs Chromium: apt-get install -y chromium, or CHROMIUM=/path/to/chromium" >&2; exit 1; }
	COLLECTIVEATTR_CHROMIUM=$(CHROMIUM) COLLECTIVEATTR_REPORT_OUT=$(REPORT_OUT) COLLECTIVEATTR_REPORT_LARGE=$(REPORT_LARGE) \
	$(GO) test -count=1 -timeout 30m -run 'TestReportInBrowser|TestReportMemory' -v ./cmd/collectiveattr/

## demo: a 30 s simulated job through the demo collector, results next to the ground truth
demo: $(OTELCOL_DEMO) cli
	OTELCOL=$(OTELCOL_DEMO) bash examples/demo/run.sh

## bench: every benchmark once
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

## bench-scale: the scale benchmarks from 64 to SCALE_MAX ranks, and their growth exponents (docs/sizing.md)
SCALE_MAX ?= 16384
bench-scale:
	COLLECTIVEATTR_SCALE_MAX=$(SCALE_MAX) $(GO) test -run '^$$' -bench 'BenchmarkScale|BenchmarkWorldSpikeLinks' -benchtime 3x -benchmem -timeout 120m \
	  ./collectiveattrprocessor/ ./cmd/collectiveattr/ | tee /dev/stderr | bash internal/scale/fit.sh

## scale-e2e: a SCALE_E2E_RANKS-rank job (4 096) at SCALE_E2E_RATE Hz (10) for SCALE_E2E_DURATION
## of job (120s), generated ahead by bin/gpujobsim (held in memory, at most 3 000 MB) and
## sent on schedule over OTLP/gRPC into the built collector in evidence mode: input pace,
## lag, drops, peak RSS and CPU (docs/sizing.md). Minutes of a core: not in test/ci
SCALE_E2E_RANKS    ?= 4096
SCALE_E2E_RATE     ?= 10
SCALE_E2E_DURATION ?= 120s
.PHONY: scale-e2e
scale-e2e: build
	COLLECTIVEATTR_OTELCOL=$(CURDIR)/$(OTELCOL) COLLECTIVEATTR_SCALE_E2E=1 COLLECTIVEATTR_SCALE_E2E_RANKS=$(SCALE_E2E_RANKS) \
	COLLECTIVEATTR_SCALE_E2E_RATE=$(SCALE_E2E_RATE) COLLECTIVEATTR_SCALE_E2E_DURATION=$(SCALE_E2E_DURATION) \
	$(GO) test -count=1 -timeout 30m -run TestScaleRealTime -v ./e2e/

## bench-pipeline: the collector's CPU per item with and without the processor, receiver
## OTLP/gRPC -> [collectiveattr] -> OTLP/gRPC exporter to a loopback sink, PIPELINE_RANKS
## ranks (1 024) in real time, PIPELINE_ROUNDS alternated rounds (5) of PIPELINE_DURATION
## (20s); PIPELINE_BASE: another collector build to measure beside; PIPELINE_FLOOR=1: the
## floor processor's collector (e2e/floorcol, the least processor that buffers every sample)
## beside; PIPELINE_HIDDEN: gpu.memory.hidden true (default), false, or both (true,false);
## PIPELINE_PROCESSORS: the processors, * the one measured (memory_limiter,*,batch as
## deploy/manifests ship it) (docs/benchmarks.md). Minutes of real-time load: not in test/ci
PIPELINE_RANKS      ?= 1024
PIPELINE_ROUNDS     ?= 5
PIPELINE_DURATION   ?= 20s
PIPELINE_BASE       ?=
PIPELINE_FLOOR      ?=
PIPELINE_HIDDEN     ?=
PIPELINE_PROCESSORS ?=
.PHONY: bench-pipeline
bench-pipeline: build $(if $(PIPELINE_FLOOR),$(OTELCOL_FLOOR))
	COLLECTIVEATTR_OTELCOL=$(CURDIR)/$(OTELCOL) COLLECTIVEATTR_PIPELINE_E2E=1 COLLECTIVEATTR_PIPELINE_E2E_RANKS=$(PIPELINE_RANKS) \
	COLLECTIVEATTR_PIPELINE_E2E_ROUNDS=$(PIPELINE_ROUNDS) COLLECTIVEATTR_PIPELINE_E2E_DURATION=$(PIPELINE_DURATION) \
	COLLECTIVEATTR_PIPELINE_E2E_BASE=$(PIPELINE_BASE) COLLECTIVEATTR_PIPELINE_E2E_FLOOR=$(if $(PIPELINE_FLOOR),$(CURDIR)/$(OTELCOL_FLOOR)) \
	COLLECTIVEATTR_PIPELINE_E2E_HIDDEN_METRIC=$(PIPELINE_HIDDEN) COLLECTIVEATTR_PIPELINE_E2E_PROCESSORS=$(PIPELINE_PROCESSORS) \
	$(GO) test -count=1 -timeout 120m -run TestPipelineCPU -v ./e2e/

## bench-cli: `collectiveattr attribute` of BENCH_BASE (one commit or several, "8c9c5f4 1872e50")
## against this tree's on one gpujobsim file (BENCH_RANKS x 3 000 samples), BENCH_ROUNDS
## alternating runs each: wall time, CPU time, peak RSS
BENCH_BASE   ?= 8c9c5f4
BENCH_RANKS  ?= 64
BENCH_ROUNDS ?= 5
bench-cli:
	BASE="$(BENCH_BASE)" RANKS=$(BENCH_RANKS) ROUNDS=$(BENCH_ROUNDS) GO=$(GO) bash cmd/collectiveattr/bench-cli.sh

## fuzz: a short run of every Fuzz target (FUZZTIME each)
fuzz:
	@targets=$$(grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . | grep -v -e '^./build/' -e '^./.tools/' || true); \
	if [ -z "$$targets" ]; then echo "no fuzz targets"; exit 0; fi; \
	for f in $$targets; do \
	  dir=$$(dirname "$$f"); \
	  for fn in $$(grep -oE '^func Fuzz[A-Za-z0-9_]*' "$$f" | sed 's/^func //'); do \
	    echo "== $$dir $$fn"; \
	    $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) "$$dir"; \
	  done; \
	done

## lint: gofmt, go vet and staticcheck
lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './build/*' -not -path './.tools/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

$(STATICCHECK):
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# ST1005 (capitalised error strings) is off: the engine returns the reference's error
# messages word for word ("Unknown collective attribution preset: ...").
staticcheck: $(STATICCHECK)
	$(STATICCHECK) -checks 'inherit,-ST1005' ./...

## ci: what .ci/run runs on a fresh clone
ci: fmt-check vet test check-demo-sources $(DEPLOY_CI_TARGETS)

clean:
	rm -rf build bin .demo
