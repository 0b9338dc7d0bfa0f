#!/usr/bin/env bash
# Writes table-columns.json: the Table column definitions a real
# kube-apiserver (v1.37.2) gives for each resource kubegate serves, as
# kubectl get asks for them. usage: table-columns.sh ADMIN_KUBECONFIG
set -euo pipefail
kc=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
grep client-certificate-data "$kc" | awk '{print $2}' | base64 -d >"$tmp/c.crt"
grep client-key-data "$kc" | awk '{print $2}' | base64 -d >"$tmp/c.key"
server=$(grep 'server:' "$kc" | awk '{print $2}')
paths=(
  api/v1/namespaces api/v1/nodes api/v1/pods api/v1/serviceaccounts api/v1/secrets api/v1/configmaps
  api/v1/events api/v1/services api/v1/replicationcontrollers apis/apps/v1/replicasets apis/apps/v1/statefulsets
  apis/events.k8s.io/v1/events apis/coordination.k8s.io/v1/leases
  apis/rbac.authorization.k8s.io/v1/roles apis/rbac.authorization.k8s.io/v1/clusterroles
  apis/rbac.authorization.k8s.io/v1/rolebindings apis/rbac.authorization.k8s.io/v1/clusterrolebindings
)
for p in "${paths[@]}"; do
  curl -sfk --cert "$tmp/c.crt" --key "$tmp/c.key" -H 'Accept: application/json;as=Table;v=v1;g=meta.k8s.io' \
    "$server/$p?limit=1" >"$tmp/$(echo "$p" | tr / _).json"
done
python3 - "$tmp" "${paths[@]}" >table-columns.json <<'PY'
import json, sys
tmp, paths = sys.argv[1], sys.argv[2:]
out = {}
for p in paths:
    t = json.load(open(f"{tmp}/{p.replace('/', '_')}.json"))
    out["/" + p] = t["columnDefinitions"]
json.dump(out, sys.stdout, indent=1)
print()
PY
