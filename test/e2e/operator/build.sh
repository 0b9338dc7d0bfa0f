#!/usr/bin/env bash
# Builds the controller-runtime operator the end-to-end tests run against
# `kubegate up`, with the controller-runtime and k8s.io versions go.mod pins,
# from the Go module proxy. The binary is kept under the Go build cache, in
# a directory named after its sources and the Go version, so it is built
# once per machine and again only when they change; the script prints its
# path.
set -euo pipefail
cd "$(dirname "$0")"
export GOWORK=off GOFLAGS=

key=$(cat go.mod go.sum ./*.go <(go env GOVERSION) | sha256sum | cut -c1-16)
out="$(go env GOCACHE)/kubegate-operator/operator-${key}"
if [[ -x $out/operator ]]; then
  echo "$out/operator"
  exit 0
fi

mkdir -p "$(go env GOCACHE)" # a fresh machine may have none yet
tmp=$(mktemp -d "$(go env GOCACHE)/kubegate-operator-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "building the operator (several minutes the first time)" >&2
# The machine may be shared: the build yields to other work.
nice go build -o "$tmp/operator" .
mkdir -p "$(dirname "$out")"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out/operator"
