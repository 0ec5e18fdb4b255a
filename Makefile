# streamlearner — build, test, benchmark.
GO        ?= go
BIN       := bin/streamlearner
PKGS      := ./...
# Packages that start goroutines run again under the race detector.
RACE_PKGS := ./offline/... ./cmd/... ./pipeline/... ./feed/...
FUZZTIME  ?= 10s

.PHONY: build test lint fuzz bench demo reproduce clean

build:
	$(GO) build -o $(BIN) ./cmd/streamlearner

## test: everything CI runs: format, vet, unit and integration tests, race detector, short fuzzing.
test: lint
	$(GO) test -count=1 $(PKGS)
	$(GO) test -count=1 -race -short $(RACE_PKGS)
	$(MAKE) fuzz

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeJSON$$' -fuzztime $(FUZZTIME) ./codec/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeLIBSVM$$' -fuzztime $(FUZZTIME) ./codec/
	$(GO) test -run '^$$' -fuzz '^FuzzUnmarshal$$' -fuzztime $(FUZZTIME) ./learners/

## bench: speed of every learner on a9a (B=100, rbf γ=0.01, parsing included) beside the C++ peer, steady-state rounds, decoding, and the service end to end beside a pass-through.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./offline/
	$(GO) test -run '^$$' -bench . ./learners/ ./codec/
	$(GO) test -run '^$$' -bench EndToEnd -benchtime 2x ./pipeline/
	$(GO) test -run '^$$' -bench 'Snapshot|CheckpointCost' -benchtime 5x ./checkpoint/

## demo: an offline run on the bundled a9a files (the Kafka demo comes with the service).
demo: build
	$(BIN) eval --data testdata/a9a.gz --test testdata/a9a.t.gz --kernel rbf:sigma2=25 --orders 2 \
	  --learner perceptron --learner stoptron:budget=500 --learner forgetron:budget=500 --learner rbp:budget=500 --learner lbp:budget=500

## reproduce: the papers' tables (needs ../shared/datasets; minutes).
reproduce:
	scripts/reproduce.sh all

clean:
	rm -rf bin out
