#!/usr/bin/env bash
# kubegate gateway in front of an existing API server. `kubegate apiserver`
# plays kube-apiserver here, started with the request-header flags a real
# one needs to trust the gateway as its front proxy; with KUBE_BIN set to a
# directory holding kube-apiserver and etcd (test/conformance/kube/build.sh
# prints one), the real ones run instead, with kubeadm's flags. rbac.yaml
# gives the gateway's own identity what it needs in both modes. Requests
# through the gateway with a client certificate, a static token and a
# service-account token reach the API server as the right user; then the
# same with --upstream-identity=impersonate.
. "$(dirname "$0")/../lib.sh"
example_init 120
cp "$EXAMPLES/front-proxy/rbac.yaml" .

step "a cluster PKI (yours already has one: kubeadm's /etc/kubernetes/pki has the same files)"
run kubegate pki init --dir cluster
kubectl --kubeconfig cluster/admin.conf config view --raw -o jsonpath='{.users[0].user.client-certificate-data}' | base64 -d >admin.crt
kubectl --kubeconfig cluster/admin.conf config view --raw -o jsonpath='{.users[0].user.client-key-data}' | base64 -d >admin.key

API=$(free_port)
if [ -n "${KUBE_BIN:-}" ]; then
	step "the existing API server: etcd and kube-apiserver with kubeadm's flags, trusting the front-proxy CA for X-Remote-* headers"
	ETCD=$(free_port)
	PEER=$(free_port)
	background etcd.log "$KUBE_BIN/etcd" --name=example --data-dir=etcd \
		--listen-client-urls="https://127.0.0.1:$ETCD" --advertise-client-urls="https://127.0.0.1:$ETCD" \
		--listen-peer-urls="https://127.0.0.1:$PEER" --initial-advertise-peer-urls="https://127.0.0.1:$PEER" \
		--initial-cluster="example=https://127.0.0.1:$PEER" \
		--cert-file=cluster/pki/etcd/server.crt --key-file=cluster/pki/etcd/server.key \
		--trusted-ca-file=cluster/pki/etcd/ca.crt --client-cert-auth \
		--peer-cert-file=cluster/pki/etcd/peer.crt --peer-key-file=cluster/pki/etcd/peer.key \
		--peer-trusted-ca-file=cluster/pki/etcd/ca.crt --peer-client-cert-auth --log-level=warn
	background apiserver.log "$KUBE_BIN/kube-apiserver" --advertise-address=127.0.0.1 --bind-address=127.0.0.1 --secure-port="$API" \
		--etcd-servers="https://127.0.0.1:$ETCD" --etcd-cafile=cluster/pki/etcd/ca.crt \
		--etcd-certfile=cluster/pki/apiserver-etcd-client.crt --etcd-keyfile=cluster/pki/apiserver-etcd-client.key \
		--tls-cert-file=cluster/pki/apiserver.crt --tls-private-key-file=cluster/pki/apiserver.key \
		--client-ca-file=cluster/pki/ca.crt \
		--service-account-key-file=cluster/pki/sa.pub --service-account-signing-key-file=cluster/pki/sa.key \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--requestheader-client-ca-file=cluster/pki/front-proxy-ca.crt \
		--requestheader-allowed-names=front-proxy-client \
		--requestheader-username-headers=X-Remote-User \
		--requestheader-uid-headers=X-Remote-Uid \
		--requestheader-group-headers=X-Remote-Group \
		--requestheader-extra-headers-prefix=X-Remote-Extra- \
		--authorization-mode=Node,RBAC --service-cluster-ip-range=10.96.0.0/12 --endpoint-reconciler-type=none
	wait_until 90 kubectl --kubeconfig cluster/super-admin.conf --server "https://127.0.0.1:$API" --request-timeout=5s get --raw /readyz
	echo "kube-apiserver serving on https://127.0.0.1:$API"
	# kubeadm init makes admin.conf's group a cluster administrator.
	run kubectl --kubeconfig cluster/super-admin.conf --server "https://127.0.0.1:$API" --request-timeout=10s \
		create clusterrolebinding kubeadm:cluster-admins --clusterrole=cluster-admin --group=kubeadm:cluster-admins
else
	step "the existing API server, trusting the front-proxy CA for X-Remote-* headers"
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
fi

step "the gateway's own identity in either mode (system:kubegate:gateway over the front-proxy certificate, or kubegate-gateway impersonating): rbac.yaml"
run kubectl --kubeconfig cluster/admin.conf --server "https://127.0.0.1:$API" --request-timeout=10s apply -f rbac.yaml

step "a static token for alice (group devs), who may read pods"
TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$TOKEN,alice,alice-uid,\"devs\"" >tokens.csv
echo "tokens.csv: <token>,alice,alice-uid,\"devs\""
# A role of its own rather than view: view is an aggregated role, filled
# in by kube-controller-manager, which does not run here.
run kubectl --kubeconfig cluster/admin.conf --server "https://127.0.0.1:$API" --request-timeout=10s \
	create clusterrole pod-reader --verb=get,list,watch --resource=pods
run kubectl --kubeconfig cluster/admin.conf --server "https://127.0.0.1:$API" --request-timeout=10s \
	create clusterrolebinding devs-pod-reader --clusterrole=pod-reader --group=devs

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

# whoami asks the API server, through the gateway, who it thinks the caller
# is (kube-apiserver indents its JSON: the answer is joined on one line).
whoami() {
	curl -sS --max-time 10 --cacert cluster/pki/ca.crt "$@" -X POST -H 'Content-Type: application/json' \
		--data '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \
		"https://127.0.0.1:$GW/apis/authentication.k8s.io/v1/selfsubjectreviews" |
		tr -d ' \n' | grep -o '"userInfo":{[^}]*}'
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

step "a service-account token through the gateway: the gateway looks its account up on the API server as system:kubegate:gateway"
run kubectl --kubeconfig cluster/admin.conf --server "https://127.0.0.1:$API" --request-timeout=10s create serviceaccount builder
SA_TOKEN=$(kubectl --kubeconfig cluster/admin.conf --server "https://127.0.0.1:$API" --request-timeout=10s create token builder)
run_sh 'whoami -H "Authorization: Bearer $SA_TOKEN"'

step "a client's own X-Remote-User is dropped by the gateway, and ignored by the API server without the front-proxy cert"
run whoami --cert admin.crt --key admin.key -H 'X-Remote-User: mallory' -H 'X-Remote-Group: system:masters'
run whoami -H "Authorization: Bearer $TOKEN" -H 'X-Remote-User: mallory'

step "impersonate mode: the gateway's own identity, kubegate-gateway, with the RBAC in rbac.yaml"
run kubegate cert issue --dir cluster --cn kubegate-gateway --out gateway-client
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
run_sh 'whoami -H "Authorization: Bearer $SA_TOKEN"'
run kubectl --kubeconfig alice.conf --server "https://127.0.0.1:$GW2" --request-timeout=10s get pods
