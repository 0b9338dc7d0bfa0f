#!/usr/bin/env bash
# kubegate gateway in front of an existing API server. `kubegate apiserver`
# plays kube-apiserver here, started with the request-header flags a real
# one needs to trust the gateway as its front proxy. Requests through the
# gateway with a client certificate and with a bearer token reach the API
# server as the right user; then the same with --upstream-identity=impersonate.
. "$(dirname "$0")/../lib.sh"
example_init 60
cp "$EXAMPLES/front-proxy/rbac.yaml" .

step "a cluster PKI (yours already has one: kubeadm's /etc/kubernetes/pki has the same files)"
run kubegate pki init --dir cluster
kubectl --kubeconfig cluster/admin.conf config view --raw -o jsonpath='{.users[0].user.client-certificate-data}' | base64 -d >admin.crt
kubectl --kubeconfig cluster/admin.conf config view --raw -o jsonpath='{.users[0].user.client-key-data}' | base64 -d >admin.key

step "the existing API server, trusting the front-proxy CA for X-Remote-* headers"
API=$(free_port)
background apiserver.log kubegate apiserver --data-dir state --bind-address 127.0.0.1 --secure-port "$API" \
	--tls-cert-file cluster/pki/apiserver.crt --tls-private-key-file cluster/pki/apiserver.key \
	--client-ca-file cluster/pki/ca.crt --anonymous-auth=false \
	--service-account-key-file cluster/pki/sa.pub --service-account-signing-key-file cluster/pki/sa.key \
	--requestheader-client-ca-file cluster/pki/front-proxy-ca.crt \
	--requestheader-allowed-names front-proxy-client \
	--requestheader-username-headers X-Remote-User \
	--requestheader-uid-headers X-Remote-Uid \
	--requestheader-group-headers X-Remote-Group \
	--requestheader-extra-headers-prefix X-Remote-Extra-
wait_for_log apiserver.log "serving on" 30

step "a static token for alice (group devs), who may read pods"
TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$TOKEN,alice,alice-uid,\"devs\"" >tokens.csv
echo "tokens.csv: <token>,alice,alice-uid,\"devs\""
run kubectl --kubeconfig cluster/admin.conf --server "https://127.0.0.1:$API" --request-timeout=10s \
	create clusterrolebinding devs-view --clusterrole=view --group=devs

step "the gateway in front of it"
GW=$(free_port)
background gateway.log kubegate gateway --bind-address 127.0.0.1 --secure-port "$GW" \
	--tls-cert-file cluster/pki/apiserver.crt --tls-private-key-file cluster/pki/apiserver.key \
	--client-ca-file cluster/pki/ca.crt --token-auth-file tokens.csv \
	--service-account-key-file cluster/pki/sa.pub \
	--upstream "https://127.0.0.1:$API" --upstream-ca-file cluster/pki/ca.crt \
	--proxy-client-cert-file cluster/pki/front-proxy-client.crt \
	--proxy-client-key-file cluster/pki/front-proxy-client.key
wait_until 30 curl -s --max-time 2 --cacert cluster/pki/ca.crt "https://127.0.0.1:$GW/kubegate/healthz"
echo "gateway serving on https://127.0.0.1:$GW"

# whoami asks the API server, through the gateway, who it thinks the caller is.
whoami() {
	curl -sS --max-time 10 --cacert cluster/pki/ca.crt "$@" -X POST -H 'Content-Type: application/json' \
		--data '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \
		"https://127.0.0.1:$GW/apis/authentication.k8s.io/v1/selfsubjectreviews" |
		grep -o '"userInfo":{[^}]*}'
}

step "a client certificate through the gateway: the API server sees kubernetes-admin"
run whoami --cert admin.crt --key admin.key
run curl -sS --max-time 10 --cacert cluster/pki/ca.crt --cert admin.crt --key admin.key \
	-o /dev/null -w 'GET namespaces: HTTP %{http_code}\n' "https://127.0.0.1:$GW/api/v1/namespaces"

step "a bearer token through the gateway: alice in devs may list pods but not create them"
run whoami -H "Authorization: Bearer $TOKEN"
run curl -sS --max-time 10 --cacert cluster/pki/ca.crt -H "Authorization: Bearer $TOKEN" \
	-o /dev/null -w 'GET pods: HTTP %{http_code}\n' "https://127.0.0.1:$GW/api/v1/namespaces/default/pods"
run curl -sS --max-time 10 --cacert cluster/pki/ca.crt -H "Authorization: Bearer $TOKEN" \
	-X POST -H 'Content-Type: application/json' --data '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"x","image":"x"}]}}' \
	-o /dev/null -w 'POST pod: HTTP %{http_code}\n' "https://127.0.0.1:$GW/api/v1/namespaces/default/pods"
run_sh "echo \"\$TOKEN\" | kubegate kubeconfig create --dir cluster --user alice --token - --server https://127.0.0.1:$GW --out alice.conf"
run kubectl --kubeconfig alice.conf --request-timeout=10s auth whoami
run kubectl --kubeconfig alice.conf --request-timeout=10s get pods
run_expect_fail kubectl --kubeconfig alice.conf --request-timeout=10s auth can-i create pods

step "a client's own X-Remote-User is dropped by the gateway, and ignored by the API server without the front-proxy cert"
run whoami --cert admin.crt --key admin.key -H 'X-Remote-User: mallory' -H 'X-Remote-Group: system:masters'
run whoami -H "Authorization: Bearer $TOKEN" -H 'X-Remote-User: mallory'

step "impersonate mode: the gateway's own identity, with the RBAC in rbac.yaml"
run kubegate cert issue --dir cluster --cn kubegate-gateway --out gateway-client
run kubectl --kubeconfig cluster/admin.conf --server "https://127.0.0.1:$API" --request-timeout=10s apply -f rbac.yaml
GW2=$(free_port)
background gateway-impersonate.log kubegate gateway --bind-address 127.0.0.1 --secure-port "$GW2" \
	--tls-cert-file cluster/pki/apiserver.crt --tls-private-key-file cluster/pki/apiserver.key \
	--client-ca-file cluster/pki/ca.crt --token-auth-file tokens.csv \
	--service-account-key-file cluster/pki/sa.pub \
	--upstream "https://127.0.0.1:$API" --upstream-ca-file cluster/pki/ca.crt \
	--upstream-identity impersonate \
	--proxy-client-cert-file gateway-client.crt --proxy-client-key-file gateway-client.key
wait_until 30 curl -s --max-time 2 --cacert cluster/pki/ca.crt "https://127.0.0.1:$GW2/kubegate/healthz"
echo "impersonating gateway serving on https://127.0.0.1:$GW2"
GW=$GW2
run whoami -H "Authorization: Bearer $TOKEN"
run whoami --cert admin.crt --key admin.key
run kubectl --kubeconfig alice.conf --server "https://127.0.0.1:$GW2" --request-timeout=10s get pods
