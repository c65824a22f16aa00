# The two commands a newcomer runs: `make demo` (the main job) and `make test`.
GO ?= go
FUZZTIME ?= 20s

.PHONY: demo test check-format vet lint unit fuzz bench

demo:
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

# Every parser and recognizer has a fuzz target; each runs for FUZZTIME.
fuzz:
	scripts/fuzz $(FUZZTIME)

bench:
	scripts/bench
