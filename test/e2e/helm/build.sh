#!/usr/bin/env bash
# Builds the helm CLI the Helm e2e test installs charts with, from the Go
# module proxy at the release go.mod pins; the module is its own so that
# kubegate's go.mod does not gain helm's dependencies. The binary is kept
# under the Go build cache, in a directory named after the pinned version
# and the Go version, so it is built once per machine; the script prints
# its path.
set -euo pipefail
cd "$(dirname "$0")"
export GOWORK=off GOFLAGS=

release=$(go list -m -f '{{.Version}}' helm.sh/helm/v4)
key=$(cat go.mod go.sum <(go env GOVERSION) | sha256sum | cut -c1-16)
out="$(go env GOCACHE)/kubegate-helm/helm-${release}-${key}"
if [[ -x $out/helm ]]; then
  echo "$out/helm"
  exit 0
fi

mkdir -p "$(go env GOCACHE)" # a fresh machine may have none yet
tmp=$(mktemp -d "$(go env GOCACHE)/kubegate-helm-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "building helm $release (a few minutes the first time)" >&2
# The build may be long and the machine shared: it yields to other work.
nice go build -trimpath -ldflags "-X helm.sh/helm/v4/internal/version.version=$release" -o "$tmp/helm" helm.sh/helm/v4/cmd/helm
mkdir -p "$(dirname "$out")"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out/helm"
