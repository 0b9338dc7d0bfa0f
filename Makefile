# Every check CI runs. `make test` is the one command that runs them all.
GO ?= go
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck
STATICCHECK_VERSION ?= v0.8.2
# Packages with concurrency run again under the race detector.
RACE_PKGS ?= ./authn/... ./authz/... ./internal/... ./ca/... ./gateway/... ./kubeconfig/... ./store/... ./test/bench/... ./scheduler/... ./apiserver/... ./up/... ./nodesim/...

.PHONY: test lint unit race build

test: lint unit race

# The version is the nearest tag, or the commit, with -dirty for local changes.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/kubegate ./cmd/kubegate

# staticcheck is installed from the Go module proxy on first use.
$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod or go.sum is not tidy: run go mod tidy"; $(GO) mod tidy -diff; exit 1; }
	$(GO) vet ./...
	$(STATICCHECK) ./...

unit:
	$(GO) test -count=1 ./...

race:
	$(GO) test -race -count=1 $(RACE_PKGS)
