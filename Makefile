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

## opensearch-up: start a real 3-node OpenSearch cluster on 127.0.0.1 (left running; prints its URLs).
## opensearch-down: stop it. OPENSEARCH_VERSION / OPENSEARCH_DIR / OPENSEARCH_NODES to change.
## SECURE=1: with the security plugin (TLS, users; on 2.19.4 unless OPENSEARCH_VERSION is set);
## prints the admin credentials and the CA file.
OPENSEARCH_VERSION ?= $(if $(SECURE),2.19.4,2.19.6)
OPENSEARCH_DIR     ?= $(CURDIR)/.opensearch
OPENSEARCH_NODES   ?= 3

.PHONY: opensearch-up opensearch-down
opensearch-up:
	$(GO) run ./testbed/cluster/cmd/osrcluster up -dir $(OPENSEARCH_DIR) -nodes $(OPENSEARCH_NODES) -version $(OPENSEARCH_VERSION)$(if $(SECURE), -secure)

opensearch-down:
	$(GO) run ./testbed/cluster/cmd/osrcluster down -dir $(OPENSEARCH_DIR)

## build: install ocb (pinned) into ./dist/bin and build ./dist/otelcol-opensearchrouted
## from builder-config.yaml.
OCB_VERSION ?= v0.165.0
.PHONY: build demo demo-opensearch
build:
	GOBIN=$(CURDIR)/dist/bin $(GO) install go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)
	$(CURDIR)/dist/bin/builder --config builder-config.yaml

## demo: the collector against a 3-node emulated cluster, routing on vs off,
## side by side (Go only). DEMO_FLAGS passes flags to osrdemo (-help lists them).
## demo-opensearch: the same against a real 3-node OpenSearch cluster (needs Java 17+).
DEMO_FLAGS ?=
demo:
	$(GO) build -o dist/osrdemo ./testbed/demo/cmd/osrdemo
	./dist/osrdemo -backend emulator $(DEMO_FLAGS)

demo-opensearch:
	$(GO) build -o dist/osrdemo ./testbed/demo/cmd/osrdemo
	./dist/osrdemo -backend opensearch $(DEMO_FLAGS)
