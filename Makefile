# opensearchrouted — see README.md.
GO        ?= go
PKGS      ?= ./...
TEST_TIMEOUT ?= 25m
BENCH     ?= .
BENCHTIME ?= 1s

.PHONY: test fmt fmt-check vet bench

## test: gofmt check, go vet, and every test with the race detector.
test: fmt-check vet
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')

fmt-check:
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

## bench: every benchmark, with allocations (BENCH=regexp to narrow it).
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) $(PKGS)
