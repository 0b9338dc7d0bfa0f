#!/usr/bin/env bash
# Builds the reference control plane the conformance test compares kubegate
# with: kube-apiserver and kube-controller-manager from k8s.io/kubernetes
# and etcd from go.etcd.io/etcd/server/v3, at the versions this module's
# go.mod pins, from the Go module proxy. The binaries are kept under the Go build cache, in a
# directory named after the pinned versions and the Go version, so they are
# built once per machine; the script prints that directory.
set -euo pipefail
cd "$(dirname "$0")"
export GOWORK=off GOFLAGS=

kube=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
key=$(cat go.mod go.sum <(go env GOVERSION) | sha256sum | cut -c1-16)
out="$(go env GOCACHE)/kubegate-conformance/kube-${kube}-${key}"
if [[ -x $out/kube-apiserver && -x $out/kube-controller-manager && -x $out/etcd ]]; then
  echo "$out"
  exit 0
fi

# The kube binaries report the version they were built as; a build from the
# module proxy would otherwise say v0.0.0-master.
minor=${kube#v1.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
ldflags="-X $pkg.gitVersion=$kube -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"

mkdir -p "$(go env GOCACHE)"
tmp=$(mktemp -d "$(go env GOCACHE)/kubegate-conformance-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "building kube-apiserver and kube-controller-manager $kube and etcd (several minutes the first time)" >&2
# The build is long and the machine may be shared: it yields to other work.
nice go build -trimpath -ldflags "$ldflags" -o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
nice go build -trimpath -ldflags "$ldflags" -o "$tmp/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager
nice go build -trimpath -o "$tmp/etcd" go.etcd.io/etcd/server/v3
mkdir -p "$(dirname "$out")"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out"
