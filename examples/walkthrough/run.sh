#!/usr/bin/env bash
# From nothing to an explained, scheduled pod: start a local cluster with
# three simulated nodes, take its admin kubeconfig apart, call the API with
# curl and a client certificate, post a pod, watch it get scheduled and
# running, and ask the scheduler why it went where it did.
. "$(dirname "$0")/../lib.sh"
example_init 60
cp "$EXAMPLES/walkthrough/app.json" .

step "start the cluster: PKI, API server, gateway, scheduler and three nodes"
PORT=$(free_port)
background up.log kubegate up --dir cluster --nodes 3 --secure-port "$PORT"
wait_for_log up.log "kubegate is up" 30
export KUBECONFIG=$PWD/cluster/admin.conf

step "the admin kubeconfig: identity, chain and expiry"
run kubegate kubeconfig inspect cluster/admin.conf

step "call the API with curl and the admin client certificate"
kubectl config view --raw -o jsonpath='{.users[0].user.client-certificate-data}' | base64 -d >admin.crt
kubectl config view --raw -o jsonpath='{.users[0].user.client-key-data}' | base64 -d >admin.key
echo "(admin.crt and admin.key are the client-certificate-data and client-key-data of admin.conf)"
run curl -sS --max-time 10 --cert admin.crt --key admin.key --cacert cluster/pki/ca.crt "https://127.0.0.1:$PORT/api/"
echo

step "post a pod"
cat app.json
run curl -sS --max-time 10 --cert admin.crt --key admin.key --cacert cluster/pki/ca.crt \
	-X POST -H 'Content-Type: application/json' --data-binary @app.json \
	-o pod.json -w 'HTTP %{http_code}\n' "https://127.0.0.1:$PORT/api/v1/namespaces/default/pods"
grep -o '"phase":"[A-Za-z]*"' pod.json

step "wait until the scheduler has bound it and its node runs it"
run kubectl wait --request-timeout=10s --timeout=30s --for=jsonpath='{.status.phase}'=Running pod/app
run kubectl get pods -o wide --request-timeout=10s
run kubectl get nodes --request-timeout=10s

step "why that node: every filter verdict and every plugin's score"
run kubegate scheduler explain app --kubeconfig cluster/admin.conf
echo
