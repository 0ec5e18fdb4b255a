# streamlearner — build, test, benchmark.
GO        ?= go
BIN       := bin/streamlearner
PKGS      := ./...
# Packages that start goroutines run again under the race detector.
RACE_PKGS := ./internal/offline/... ./cmd/... ./pipeline/... ./internal/feed/... ./internal/kafka/fetch/...
# The version streamlearner --version and streamlearner_build_info report.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS   := -X main.version=$(VERSION) -X main.revision=$(REVISION)
# Fuzzing is bounded by executions, not time: with a time bound, Go before
# 1.27 can fail a run with "context deadline exceeded" when the deadline
# falls while a worker minimizes a new input (golang/go#75804); CI failed
# so on FuzzDecodeJSON. 40,000 runs take 1-10 s a target here.
FUZZTIME  ?= 40000x
FUZZMIN   ?= 5s
# Every test run has an explicit bound well under CI's, so a hang fails
# with a stack dump instead of eating the budget. The integration tests
# (each with a broker of its own) and the process tests (crash, soak,
# storm, label topic, SIGTERM) are t.Parallel and mostly wait on paced
# streams, sessions and restarts: together they use about 0.6 of a core,
# so eight at a time, and four packages at a time, overlap on two cores
# (pipeline took 285 s at four at a time and one test after another for
# the rest, 104 s so).
TEST_TIMEOUT  ?= 12m
TEST_PARALLEL ?= 8
TEST_PACKAGES ?= 4

.PHONY: build test lint fuzz bench demo reproduce clean

# CGO off, as the image builds it: no dynamic loader, libc start-up or cgo
# thread, 0.8 ms of every command's start-up (the tests keep cgo: the race
# detector needs it).
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/streamlearner

## test: everything CI runs: format, vet, unit and integration tests, race detector, short fuzzing.
test: lint
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -p $(TEST_PACKAGES) -parallel $(TEST_PARALLEL) $(PKGS)
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -p $(TEST_PACKAGES) -parallel $(TEST_PARALLEL) -race -short $(RACE_PKGS)
# purego: the scalar path of CPUs without AVX-512, against the same tests.
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -tags purego ./learners/ ./internal/offline/
	$(MAKE) fuzz

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags purego ./learners/

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeJSON$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) ./codec/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeLIBSVM$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) ./codec/
	$(GO) test -run '^$$' -fuzz '^FuzzParseSimple$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) ./codec/
	$(GO) test -run '^$$' -fuzz '^FuzzUnmarshal$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) ./learners/
	$(GO) test -run '^$$' -fuzz '^FuzzAppendPrediction$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) ./codec/
	$(GO) test -run '^$$' -fuzz '^FuzzEventDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) ./codec/
	$(GO) test -run '^$$' -fuzz '^FuzzModelUnmarshal$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) ./internal/model/
	$(GO) test -run '^$$' -fuzz '^FuzzUnmarshal$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) ./internal/pending/
	$(GO) test -run '^$$' -fuzz '^FuzzAvroFile$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) ./codec/dataset/
	$(GO) test -run '^$$' -fuzz '^FuzzDecoder$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) ./internal/kafka/fetch/

## bench: every speed and memory target beside its measured value and ratio (scripts/bench.sh; raw outputs in out/bench; COUNT, E2E_RUNS, RSS_RECORDS=0 to skip the 10M-record memory run), then the other benchmarks.
bench:
	scripts/bench.sh
	$(GO) test -run '^$$' -bench . -benchtime 3x ./internal/offline/
	$(GO) test -run '^$$' -bench EndToEnd -benchtime 3x ./pipeline/
	$(GO) test -run '^$$' -bench Snapshot -benchtime 5x ./checkpoint/

## demo: the embedded broker, a drifting stream, one group member with checkpoints, live progress, then a drift report and plot in out/demo (about 12 s after the build).
demo: build
	$(BIN) demo

## reproduce: the papers' tables (needs ../shared/datasets; minutes).
reproduce:
	scripts/reproduce.sh all

clean:
	rm -rf bin out
