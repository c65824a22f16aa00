# The two commands a newcomer runs: `make demo` (the main job) and `make test`.
GO ?= go
FUZZTIME ?= 10s

.PHONY: demo test check-format vet lint unit fuzz bench

demo:
	@echo "make demo: building cut, then running cut demo (a first build on a cold cache takes a few minutes)"
	$(GO) run ./cmd/cut demo

test: check-format vet lint unit fuzz

check-format:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# staticcheck, pinned, fetched from the module proxy by `go run`; it is not a
# dependency of the module (see the README).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) run $(STATICCHECK) ./...

unit:
	$(GO) test -race -count=1 -timeout 20m ./...

# Every parser and recognizer has a fuzz target (scripts/fuzz finds them all:
# 53); each runs for FUZZTIME, 10 s so that CI stays well inside 30 minutes
# on 2 CPUs (about 10 of its minutes are fuzzing); run
# `make fuzz FUZZTIME=2m` for a longer pass.
fuzz:
	scripts/fuzz $(FUZZTIME)

bench:
	scripts/bench
