# Every check CI runs. `make test` is the one command that runs them all.
GO ?= go
# Every target builds with Go 1.27.3, which the go command fetches from
# the module proxy on first use: its standard library has the security
# fixes that govulncheck checks for. The module itself needs Go 1.26.8.
export GOTOOLCHAIN := go1.27.3
# Tools are built with that toolchain, into a directory of their own.
TOOLS ?= $(CURDIR)/.cache/$(GOTOOLCHAIN)/bin
STATICCHECK ?= $(TOOLS)/staticcheck
STATICCHECK_VERSION ?= v0.8.2
GOVULNCHECK ?= $(TOOLS)/govulncheck
GOCYCLO ?= $(TOOLS)/gocyclo
GOCYCLO_VERSION ?= v0.6.0
GOVULNCHECK_VERSION ?= v1.9.0
# The Go vulnerability database, built from its module on the module
# proxy, so that the check needs no other server.
VULNDB_VERSION ?= v0.0.0-20261105234957-e22db6528018
VULNDB ?= $(CURDIR)/.cache/vulndb-$(VULNDB_VERSION)
# Packages with concurrency run again under the race detector.
RACE_PKGS ?= ./authn/... ./console/... ./authz/... ./internal/... ./ca/... ./gateway/... ./kubeconfig/... ./store/... ./test/bench/... ./scheduler/... ./apiserver/... ./up/... ./nodesim/... ./controllers/...

.PHONY: test lint vuln unit race build oracle oidcprovider helm operator

test: lint vuln unit race

# The version is the nearest tag, or the commit, with -dirty for local changes.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/kubegate ./cmd/kubegate

# staticcheck and govulncheck are installed from the Go module proxy on
# first use.
$(STATICCHECK):
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(GOCYCLO):
	GOBIN=$(TOOLS) $(GO) install github.com/fzipp/gocyclo/cmd/gocyclo@$(GOCYCLO_VERSION)

$(GOVULNCHECK):
	GOBIN=$(TOOLS) $(GO) install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)

$(VULNDB)/index/db.json:
	$(GO) mod download golang.org/x/vulndb@$(VULNDB_VERSION)
	$(GO) run golang.org/x/vulndb/cmd/indexdb@$(VULNDB_VERSION) \
	  -vulns "$$($(GO) env GOMODCACHE)/golang.org/x/vulndb@$(VULNDB_VERSION)/data/osv" -out $(VULNDB)

# govulncheck fails on any known vulnerability that the code reaches.
vuln: $(GOVULNCHECK) $(VULNDB)/index/db.json
	$(GOVULNCHECK) -db file://$(VULNDB) ./...

# Besides the linters: no function of the API server above a cyclomatic
# count of 25 (request routing is a lookup, not a switch), and nothing
# under internal/ importing kubegate packages outside it.
lint: $(STATICCHECK) $(GOCYCLO)
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod or go.sum is not tidy: run go mod tidy"; $(GO) mod tidy -diff; exit 1; }
	@cd test/conformance/kube && $(GO) mod tidy -diff >/dev/null || { echo "test/conformance/kube/go.mod is not tidy: run go mod tidy there"; exit 1; }
	@cd test/oidcprovider/dex && $(GO) mod tidy -diff >/dev/null || { echo "test/oidcprovider/dex/go.mod is not tidy: run go mod tidy there"; exit 1; }
	@cd test/e2e/helm && $(GO) mod tidy -diff >/dev/null || { echo "test/e2e/helm/go.mod is not tidy: run go mod tidy there"; exit 1; }
	@cd test/e2e/operator && $(GO) mod tidy -diff >/dev/null || { echo "test/e2e/operator/go.mod is not tidy: run go mod tidy there"; exit 1; }
	$(GO) vet ./...
	$(STATICCHECK) ./...
	cd test/e2e/operator && $(GO) vet ./... && $(STATICCHECK) ./...
	@out=$$($(GOCYCLO) -over 25 apiserver); \
	  if [ -n "$$out" ]; then echo "functions above a cyclomatic count of 25 in apiserver/:"; echo "$$out"; exit 1; fi
	@out=$$($(GO) list -f '{{.ImportPath}}: {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./internal/... | \
	  tr ' ' '\n' | grep -E '^github.com/kubegate/kubegate/' | grep -vE '^github.com/kubegate/kubegate/internal(/|:|$$)' | sort -u); \
	  if [ -n "$$out" ]; then echo "packages under internal/ import kubegate packages outside it:"; echo "$$out"; exit 1; fi

# The reference kube-apiserver, kube-controller-manager and etcd that
# test/conformance holds kubegate to, built from the module proxy once per machine and kept in
# the Go build cache; a first build takes several minutes.
oracle:
	test/conformance/kube/build.sh >/dev/null

# Dex, the OpenID provider the OIDC tests and examples/oidc log users in
# with, built from the module proxy once per machine like the oracle.
oidcprovider:
	test/oidcprovider/build.sh >/dev/null

# The helm CLI test/e2e installs a chart with, built the same way.
helm:
	test/e2e/helm/build.sh >/dev/null

# The controller-runtime operator the end-to-end tests run, built in its
# own module once per machine like the oracle.
operator:
	test/e2e/operator/build.sh >/dev/null

unit: oracle oidcprovider helm operator
	$(GO) test -count=1 -timeout 25m ./...

race:
	$(GO) test -race -count=1 -timeout 25m $(RACE_PKGS)
