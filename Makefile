# Thin aliases; the logic lives in scripts/ and in Go.
GO       ?= go
BIN      ?= bin
FUZZTIME ?= 20s

.PHONY: build run test bench lint fuzz soak loadtest clean

build:
	$(GO) build -o $(BIN)/ ./cmd/...

run: build
	./scripts/run.sh

test:
	./scripts/test.sh

lint:
	$(GO) vet ./...
	./scripts/staticcheck.sh

bench:
	SEALTRAIL_BENCH_SHRED=1 $(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./...

fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

# soak fuzzes 60s per target unless FUZZTIME is given (make soak FUZZTIME=10s).
soak:
	FUZZTIME=$(if $(filter file,$(origin FUZZTIME)),60s,$(FUZZTIME)) ./scripts/soak.sh

loadtest:
	./scripts/loadtest.sh

clean:
	rm -rf $(BIN)
