# Every check CI runs. `make test` is the one command that runs them all.
GO ?= go
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck
# Packages with concurrency run again under the race detector.
RACE_PKGS ?= ./authn/... ./authz/... ./internal/... ./ca/... ./gateway/... ./kubeconfig/... ./store/... ./test/bench/... ./scheduler/... ./apiserver/... ./up/... ./nodesim/...

.PHONY: test lint unit race build

test: lint unit race

build:
	$(GO) build -o bin/kubegate ./cmd/kubegate

lint:
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

unit:
	$(GO) test -count=1 ./...

race:
	$(GO) test -race -count=1 $(RACE_PKGS)
