# opensearchrouted — see README.md.
GO        ?= go
PKGS      ?= ./...
TEST_TIMEOUT ?= 25m
BENCH     ?= .
BENCHTIME ?= 1s

.PHONY: test test-fast check-cluster-lock fmt fmt-check vet bench

# Packages whose tests start real OpenSearch clusters (their tests import
# testbed/cluster, or are testbed/cluster's own).
CLUSTER_PKGS = $(shell $(GO) list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' $(PKGS) | \
	awk '{ for (i = 1; i <= NF; i++) if ($$i ~ /\/testbed\/cluster$$/) { print $$1; break } }')
GO_PKGS = $(filter-out $(CLUSTER_PKGS),$(shell $(GO) list $(PKGS)))
# Modules of their own inside the repository (their tests need packages that
# must not enter the collector's build graph): deploy/monitoring.
SUBMODULES ?= deploy/monitoring
# Tests of the cluster packages that start no real cluster (for test-fast).
REAL_CLUSTER_TESTS ?= RealCluster|RealOpenSearch|TestClusterForms|TestRoutingVectorsAgainstServer|TestSplitKeepsRoutingShards|TestTopologyShapes|TestWriteShapes|TestDataStreamShapes|TestCatShardsRelocatingShape|TestPITShapes|TestPITContextLossAfterKill|TestTinyWriteQueue|TestOrphanedNodesExit|TestSecureCluster|TestDifferentialRoles|TestMappingDifferential|TestDelayedRealNode

## test: gofmt check, go vet, and every test with the race detector. The
## packages without real clusters run in parallel; then those with real
## clusters, one package at a time, so that none waits for another's
## cluster (only one runs on the machine at a time) inside its test timeout.
## The SUBMODULES' tests run between them (deploy/monitoring's need the
## prometheus and promtool binaries on PATH: .ci/run installs them).
test: fmt-check vet check-cluster-lock
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(GO_PKGS)
	$(MAKE) test-submodules
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -p 1 $(CLUSTER_PKGS)

## test-fast: the same without Java: every test except those of real
## OpenSearch clusters (the emulator suites stay); OSR_REALCLUSTER=off makes
## any real-cluster test that the skip list misses fail, not pass.
test-fast: fmt-check vet
	OSR_REALCLUSTER=off $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -skip '$(REAL_CLUSTER_TESTS)' $(PKGS)
	$(MAKE) test-submodules

.PHONY: test-submodules
test-submodules:
	@set -e; for m in $(SUBMODULES); do echo "cd $$m && $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./..."; \
	  (cd $$m && $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...); done

## check-cluster-lock: fails at once if a cluster of `make opensearch-up` holds
## the machine's real-cluster lock (the tests would wait for it forever).
check-cluster-lock:
	@$(GO) run ./testbed/cluster/cmd/osrcluster check

fmt:
	gofmt -w $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')

fmt-check:
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	@set -e; for m in $(SUBMODULES); do echo "cd $$m && $(GO) vet ./..."; (cd $$m && $(GO) vet ./...); done

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

## build: ./dist/otelcol-opensearchrouted from builder-config.yaml: ocb (pinned,
## installed into ./dist/bin) generates the sources when they are missing or
## stale, then the binary is compiled as ocb compiles it (CGO_ENABLED=0,
## -trimpath, -ldflags=-s -w), so later builds are incremental. make demo and
## the docs test build it the same way (testbed/demo.EnsureCollector).
.PHONY: build demo demo-opensearch osrdemo
osrdemo:
	$(GO) build -o dist/osrdemo ./testbed/demo/cmd/osrdemo

build: osrdemo
	./dist/osrdemo -build-only

## demo: the collector against a 3-node emulated cluster, routing on vs off,
## side by side (Go only). DEMO_FLAGS passes flags to osrdemo (-help lists them).
## demo-opensearch: the same against a real 3-node OpenSearch cluster (needs Java 17+).
DEMO_FLAGS ?=
demo: osrdemo
	./dist/osrdemo -backend emulator $(DEMO_FLAGS)

demo-opensearch: osrdemo
	./dist/osrdemo -backend opensearch $(DEMO_FLAGS)
