# spokekit: three kubectl plugins on one library. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := build

PLUGINS      := spoke fleetdrain park
OUT          := $(CURDIR)/_output
BIN          := $(OUT)/bin
CACHE        ?= $(HOME)/.cache/spokekit
TOOLS_BIN    := $(CACHE)/tools/bin
E2E_WORKDIR  ?= /tmp/spokekit-e2e
DEMO_WORKDIR ?= $(CACHE)/demo
BENCH        ?= .
# make e2e PKG=spoke RUN=TestName: one package (or several, space separated) of
# e2e/, and only the tests matching RUN; all of them by default.
# make test-unit PKG=./internal/spoke/... RUN=TestName: the same for unit tests,
# where PKG takes Go package patterns.
PKG          ?=
RUN          ?=
INSTALL_DIR  ?= $(shell go env GOPATH)/bin
# make dist: GoReleaser with this config writes into $(OUT)/dist; PLATFORMS (e.g. linux/amd64)
# builds fewer than the config's six platforms.
GORELEASER_CONFIG := internal/release/goreleaser.yaml
PLATFORMS    ?=
KREW_MANIFESTS ?= $(CURDIR)/krew-manifests

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w -X github.com/spokekit/spokekit/internal/cli.version=$(VERSION) \
           -X github.com/spokekit/spokekit/internal/cli.commit=$(COMMIT) \
           -X github.com/spokekit/spokekit/internal/cli.date=$(DATE)
GO_BUILD := CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)"

# `make dist VERSION=v0.2.0` releases that version, tagged or not (so GoReleaser's
# check that the tag is checked out is skipped) and updates krew-manifests/;
# without VERSION it builds a snapshot of the checkout and leaves them alone.
ifneq ($(origin VERSION),file)
DIST_ENV   := GORELEASER_CURRENT_TAG=$(VERSION)
DIST_FLAGS := --skip=validate
else
DIST_FLAGS := --snapshot
endif
# GoReleaser asks git for the remote's URL and gives up without one (a fresh
# `git init`, a worktree): name the project's, for its run only.
DIST_GIT := GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/spokekit/spokekit
comma := ,
DIST_TARGETS := $(subst $() ,$(comma) ,$(strip $(subst /,_,$(PLATFORMS))))

# The tool modules (e2e/tools/<module>, or hack/tools/<module> for build and
# release tools) each e2e package runs beside the
# control plane's, so `make e2e PKG=park` builds only what park runs.
# golangci-lint is lint's, never a test's.
E2E_TOOLS_base       := kubernetes etcd kwok
E2E_TOOLS_spoke      := ocm
E2E_TOOLS_fleetdrain := ocm
E2E_TOOLS_park       := cluster-api
E2E_TOOLS_foundation := controller-gen
E2E_TOOLS_krew       := krew goreleaser
E2E_TOOLS_bench      := ocm cluster-api
E2E_TOOLS := $(sort $(E2E_TOOLS_base) $(foreach p,$(or $(strip $(PKG)),spoke fleetdrain park foundation krew),$(E2E_TOOLS_$(p))))
DEMO_TOOLS := $(E2E_TOOLS_base) ocm cluster-api

export SPOKEKIT_CACHE := $(CACHE)
E2E_ENV := SPOKEKIT_TOOLS_BIN=$(TOOLS_BIN) SPOKEKIT_PLUGINS_BIN=$(BIN)
# The longest packages, named one by one, longest first: hack/e2e.sh starts
# them in this order, one job per core at a time (SPOKEKIT_E2E_JOBS;
# e2e/spoke's addon pass is two shards), then e2e/spoke's unified pass, then
# the short ones, so that the long ones end together.
E2E_PKGS := $(if $(strip $(PKG)),$(addprefix ./e2e/,$(addsuffix /,$(PKG))),./e2e/park/ ./e2e/spoke/ ./e2e/fleetdrain/ ./e2e/...)

# go test runs as many parallel tests of a package at once as there are
# cores (2 here) unless told; e2e/park's mostly wait on Cluster API, and its
# longest takes 250 s of the about 400 s its eleven took two at a time.
E2E_PARALLEL ?= 6

# $(call e2e_run,COMMAND) runs COMMAND with a work directory of its own under
# E2E_WORKDIR and, at its end, kills what a killed test left running there:
# only there, never another checkout's or another make's run. The pattern is
# expanded by the shell, so it cannot match the shell's own command line.
define e2e_run
@mkdir -p $(E2E_WORKDIR)
dir=$$(mktemp -d $(E2E_WORKDIR)/make-XXXXXX) || exit; s=$$SECONDS; \
	  $(E2E_ENV) SPOKEKIT_E2E_WORKDIR=$$dir $(1); \
	  rc=$$?; pkill -f "$$dir/run-[0-9]" 2>/dev/null; rmdir $$dir 2>/dev/null; \
	  echo "== end-to-end run: $$((SECONDS - s))s (exit $$rc)"; exit $$rc
endef

# $(call timed,NAME,COMMAND) runs COMMAND and then says how long it took, so
# that `make test` shows where its time goes (go test adds each package's).
define timed
@s=$$SECONDS; $(2); rc=$$?; echo "== $(1): $$((SECONDS - s))s (exit $$rc)"; exit $$rc
endef

.PHONY: help build install dist test test-unit docs fmt verify-tidy e2e e2e-tools demo-tools bench-tools generate verify-generate lint demo demo-up demo-down bench clean

help: ## Show the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

build: ## Build the three plugins (and their completion scripts) into _output/bin
	@mkdir -p $(BIN)
	$(GO_BUILD) -o $(BIN)/ $(addprefix ./plugins/kubectl-,$(PLUGINS))
	@for p in $(PLUGINS); do install -m 0755 plugins/kubectl-$$p/kubectl_complete-$$p $(BIN)/; done

install: build ## Put the plugins and completion scripts on PATH (INSTALL_DIR, default $GOPATH/bin)
	@mkdir -p $(INSTALL_DIR)
	@for p in $(PLUGINS); do install -m 0755 $(BIN)/kubectl-$$p $(BIN)/kubectl_complete-$$p $(INSTALL_DIR)/; done
	@echo "installed $(addprefix kubectl-,$(PLUGINS)) and their completion scripts into $(INSTALL_DIR)"

dist: ## Release archives, checksums and krew manifests with GoReleaser: a snapshot, or VERSION=vX.Y.Z
	hack/tools/build.sh $(TOOLS_BIN) goreleaser
	$(if $(PLATFORMS),sed -E 's/^( *targets:).*/\1 [$(DIST_TARGETS)]/',cat) $(GORELEASER_CONFIG) | \
	  $(DIST_GIT) $(DIST_ENV) $(TOOLS_BIN)/goreleaser release --config - --clean $(DIST_FLAGS)
	$(if $(DIST_ENV),mkdir -p $(KREW_MANIFESTS) && cp $(OUT)/dist/krew/*.yaml $(KREW_MANIFESTS)/)

test: test-unit e2e ## Run every test: unit, then end-to-end on real local clusters

test-unit: ## Unit tests with the race detector (no cluster needed): all, or PKG=./internal/spoke/... RUN=TestName
	$(call timed,unit tests,CGO_ENABLED=1 go test -race $(if $(RUN),-run '$(RUN)') $(or $(strip $(PKG)),./...))

docs: ## Regenerate the command reference in docs/reference from the commands' own help
	go run ./hack/docs docs/reference

fmt: ## Format every Go file as lint expects: gofmt -s, then gofumpt and gci (.golangci.yml's formatters)
	gofmt -s -w $$(git ls-files '*.go')
	hack/tools/build.sh $(TOOLS_BIN) golangci-lint
	$(TOOLS_BIN)/golangci-lint fmt ./...

verify-tidy: ## Fail when `go mod tidy` would change go.mod or go.sum
	@go mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

e2e-tools: ## Build the pinned tools the e2e tests run (control plane, kubectl, kwok, OCM, Cluster API, krew, GoReleaser; PKG= only its own), cached by version
	$(call timed,e2e tools,hack/tools/build.sh $(TOOLS_BIN) $(E2E_TOOLS))

e2e: build e2e-tools ## End-to-end tests on kwokctl clusters: all, or PKG=spoke (a directory of e2e/) RUN=TestName
	$(call e2e_run,hack/e2e.sh -timeout 60m -parallel $(E2E_PARALLEL) $(if $(RUN),-run '$(RUN)') -- $(E2E_PKGS))

generate: ## Regenerate the Spoke and Hub CRDs from internal/api
	hack/tools/build.sh $(TOOLS_BIN) controller-gen
	$(TOOLS_BIN)/controller-gen crd paths=./internal/api/fleetconfig/... output:crd:dir=internal/api/crds

verify-generate: ## Fail when the CRDs in internal/api/crds are not what internal/api generates
	hack/tools/build.sh $(TOOLS_BIN) controller-gen
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	$(TOOLS_BIN)/controller-gen crd paths=./internal/api/fleetconfig/... output:crd:dir=$$tmp && \
	diff -ru internal/api/crds $$tmp || { echo "internal/api/crds is behind internal/api: run make generate"; exit 1; }

# Builds only controller-gen and golangci-lint, never the e2e tools: a fresh
# clone lints in minutes.
lint: verify-generate verify-tidy ## Generated CRDs up to date, gofmt, and golangci-lint (.golangci.yml, go vet included) over every file, e2e ones too
	hack/tools/build.sh $(TOOLS_BIN) golangci-lint
	@out=$$(gofmt -s -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed (make fmt):"; echo "$$out"; exit 1; fi
	$(TOOLS_BIN)/golangci-lint run ./...

demo-tools:
	hack/tools/build.sh $(TOOLS_BIN) $(DEMO_TOOLS)

bench-tools:
	hack/tools/build.sh $(TOOLS_BIN) $(E2E_TOOLS_base) $(E2E_TOOLS_bench)

demo: build demo-tools ## Bring up hub, spokes and a platform cluster, run the plugins on them, tear down
	$(E2E_ENV) go run ./e2e/demo run

demo-up: build demo-tools ## Like demo, but leave the clusters running and print how to use them
	$(E2E_ENV) go run ./e2e/demo up --workdir $(DEMO_WORKDIR)

demo-down: demo-tools ## Tear down what demo-up left running
	$(E2E_ENV) go run ./e2e/demo down --workdir $(DEMO_WORKDIR)

bench: build bench-tools ## One table of spokekit against kubectl on local clusters, also in _output/bench.json and docs/performance.md (BENCH=regexp picks benchmarks)
	$(call e2e_run,SPOKEKIT_BENCH_OUT=$(OUT)/bench.json go test -tags e2e -count=1 -run '^$$' -bench '$(BENCH)' -benchtime 1x -timeout 120m ./e2e/bench/)

clean: ## Remove build output (the tool cache in $(CACHE) stays)
	rm -rf $(OUT)
