# The two commands a newcomer runs: `make demo` (the main job) and `make test`.
# `make install` installs the command as privacycut, never as cut: a cut on
# PATH would shadow coreutils cut(1) or be shadowed by it.
GO ?= go
FUZZTIME ?= 10s
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
# The program's installed name; it names itself so in its messages.
PROG ?= privacycut

.PHONY: demo test check-format vet lint unit fuzz bench install uninstall man

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

# The acceptance suites in tests/ run after every other package, alone:
# R1 drives vaultd to its memory cgroup's limit, and with other packages'
# tests loading the CPUs and the disk beside it the kernel can thrash the
# cgroup for minutes instead of OOM-killing it (docs/ACCEPTANCE.md, R1).
unit:
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v '/tests$$')
	$(GO) test -race -count=1 -timeout 20m ./tests/

# Every parser and recognizer has a fuzz target (scripts/fuzz finds them all:
# 57); each runs for FUZZTIME, 10 s so that CI stays well inside 30 minutes
# on 2 CPUs (about 10 of its minutes are fuzzing); run
# `make fuzz FUZZTIME=2m` for a longer pass.
fuzz:
	scripts/fuzz $(FUZZTIME)

bench:
	scripts/bench

# install builds cut and vaultd with their VCS stamp (--version) and installs
# them as $(PROG) and vaultd, their manual pages as $(PROG)(1) and vaultd(8),
# and the bash completion of $(PROG). DESTDIR stages the tree for a package.
install:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(GO) build -buildvcs=auto -trimpath -o "$$tmp/$(PROG)" ./cmd/cut && \
	$(GO) build -buildvcs=auto -trimpath -o "$$tmp/vaultd" ./cmd/vaultd && \
	"$$tmp/$(PROG)" completion bash > "$$tmp/$(PROG).bash" && \
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MANDIR)/man1" "$(DESTDIR)$(MANDIR)/man8" "$(DESTDIR)$(BASHCOMPDIR)" && \
	install -m 0755 "$$tmp/$(PROG)" "$$tmp/vaultd" "$(DESTDIR)$(BINDIR)/" && \
	install -m 0644 docs/cut.1 "$(DESTDIR)$(MANDIR)/man1/$(PROG).1" && \
	install -m 0644 docs/vaultd.8 "$(DESTDIR)$(MANDIR)/man8/vaultd.8" && \
	install -m 0644 "$$tmp/$(PROG).bash" "$(DESTDIR)$(BASHCOMPDIR)/$(PROG)" && \
	echo "installed $(DESTDIR)$(BINDIR)/$(PROG) and $(DESTDIR)$(BINDIR)/vaultd"

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/$(PROG)" "$(DESTDIR)$(BINDIR)/vaultd" "$(DESTDIR)$(MANDIR)/man1/$(PROG).1" \
		"$(DESTDIR)$(MANDIR)/man8/vaultd.8" "$(DESTDIR)$(BASHCOMPDIR)/$(PROG)"

# man regenerates docs/cut.1 and docs/vaultd.8 from the command tables and
# docs/cut.1.md, docs/vaultd.8.md (a test fails when they are not in step).
man:
	$(GO) run ./cmd/internal/mangen
