#!/usr/bin/env bash
# Builds Dex, the OpenID provider the OIDC tests and examples/oidc log users
# in with, from the Go module proxy at the commit of its v2.45.1 release,
# which dex/go.mod pins (Dex's module path has no /v2, so the proxy knows
# the release by its pseudo-version). The binary is kept under the Go build
# cache, in a directory named after the pinned version and the Go version,
# so it is built once per machine; the script prints its path.
set -euo pipefail
cd "$(dirname "$0")/dex"
export GOWORK=off GOFLAGS=

release=v2.45.1
key=$(cat go.mod go.sum <(go env GOVERSION) | sha256sum | cut -c1-16)
out="$(go env GOCACHE)/kubegate-oidcprovider/dex-${release}-${key}"
if [[ -x $out/dex ]]; then
  echo "$out/dex"
  exit 0
fi

mkdir -p "$(go env GOCACHE)" # a fresh machine may have none yet
tmp=$(mktemp -d "$(go env GOCACHE)/kubegate-oidcprovider-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "building dex $release (a few minutes the first time)" >&2
# The build is long and the machine may be shared: it yields to other work.
nice go build -trimpath -ldflags "-X main.version=$release" -o "$tmp/dex" github.com/dexidp/dex/cmd/dex
mkdir -p "$(dirname "$out")"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out/dex"
