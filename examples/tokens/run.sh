#!/usr/bin/env bash
# Three kinds of bearer token against a kubegate up cluster, each used with
# curl and kubectl: a static token file, a service-account token signed
# offline by `kubegate token create`, and one from `kubectl create token`
# (the TokenRequest API). Then a restart: tokens and RBAC bindings survive.
. "$(dirname "$0")/../lib.sh"
example_init 60

step "a static token file, read by kubegate up from DIR/tokens.csv"
mkdir cluster
STATIC=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$STATIC,bob,bob-uid,\"devs,qa\"" >cluster/tokens.csv
echo 'cluster/tokens.csv: <token>,bob,bob-uid,"devs,qa"'
PORT=$(free_port)
API=https://127.0.0.1:$PORT
background up.log kubegate up --dir cluster --secure-port "$PORT"
wait_for_log up.log "kubegate is up" 30
export KUBECONFIG=$PWD/cluster/admin.conf
CA=cluster/pki/ca.crt
K=(--request-timeout=10s)

# whoami prints who the API server takes the caller of TOKEN for.
whoami() {
	curl -sS --max-time 10 --cacert "$CA" -H "Authorization: Bearer $1" -X POST -H 'Content-Type: application/json' \
		--data '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \
		"$API/apis/authentication.k8s.io/v1/selfsubjectreviews" | grep -o '"userInfo":{"username":"[^"]*"'
}

step "RBAC: group devs may read, service account builder may edit default"
run kubectl "${K[@]}" create clusterrolebinding devs-view --clusterrole=view --group=devs
run kubectl "${K[@]}" create serviceaccount builder
run kubectl "${K[@]}" create rolebinding builder-edit --clusterrole=edit --serviceaccount=default:builder

step "the static token with curl and kubectl"
run_sh 'whoami "$STATIC"'
run_sh 'curl -sS --max-time 10 --cacert $CA -H "Authorization: Bearer $STATIC" -o /dev/null -w "GET pods: HTTP %{http_code}\n" $API/api/v1/namespaces/default/pods'
run_sh 'echo "$STATIC" | kubegate kubeconfig create --dir cluster --user bob --token - --server "$API" --out bob.conf'
run kubectl --kubeconfig bob.conf "${K[@]}" auth whoami
run_expect_fail kubectl --kubeconfig bob.conf "${K[@]}" create configmap by-bob

step "a service-account token signed offline with pki/sa.key"
echo '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"from-curl"},"data":{"by":"builder"}}' >configmap.json
UID_=$(kubectl "${K[@]}" get serviceaccount builder -o jsonpath='{.metadata.uid}')
run_sh 'OFFLINE=$(kubegate token create --dir cluster --namespace default --service-account builder --uid "$UID_" --duration 1h)'
run_sh 'echo "$OFFLINE" | kubegate cert inspect --key cluster/pki/sa.pub - | grep -E "Issuer|Subject|Audience|Signature|User:|Groups:"'
run_sh 'whoami "$OFFLINE"'
run_sh 'curl -sS --max-time 10 --cacert $CA -H "Authorization: Bearer $OFFLINE" -X POST -H "Content-Type: application/json" --data @configmap.json -o /dev/null -w "POST configmap: HTTP %{http_code}\n" $API/api/v1/namespaces/default/configmaps'
run_sh 'echo "$OFFLINE" | kubegate kubeconfig create --dir cluster --user builder --token - --server "$API" --out builder.conf'
run kubectl --kubeconfig builder.conf "${K[@]}" auth whoami
run kubectl --kubeconfig builder.conf "${K[@]}" get configmap from-curl

step "a service-account token from the TokenRequest API"
run_sh 'REQUESTED=$(kubectl --request-timeout=10s create token builder --duration 1h)'
run_sh 'whoami "$REQUESTED"'
run_sh 'curl -sS --max-time 10 --cacert $CA -H "Authorization: Bearer $REQUESTED" -o /dev/null -w "GET configmaps: HTTP %{http_code}\n" $API/api/v1/namespaces/default/configmaps'
run_sh 'kubectl --kubeconfig builder.conf --token "$REQUESTED" --request-timeout=10s create configmap from-kubectl --from-literal=by=builder'

step "restart kubegate up: tokens, bindings and objects are still there"
stop "$LAST_PID"
background up2.log kubegate up --dir cluster --secure-port "$PORT"
wait_for_log up2.log "kubegate is up" 30
run_sh 'whoami "$STATIC"'
run_sh 'whoami "$OFFLINE"'
run_sh 'whoami "$REQUESTED"'
run_sh 'kubectl --kubeconfig builder.conf --token "$REQUESTED" --request-timeout=10s get configmaps'
run kubectl --kubeconfig bob.conf "${K[@]}" auth can-i list pods

step "delete the service account: its tokens stop working"
run kubectl "${K[@]}" delete serviceaccount builder
echo "(the gateway, like kube-apiserver, keeps a token's verdict for up to 10 s)"
refused() { [ "$(curl -s --max-time 5 --cacert "$CA" -H "Authorization: Bearer $1" -o /dev/null -w '%{http_code}' "$API/api")" = 401 ]; }
wait_until 20 refused "$OFFLINE"
wait_until 20 refused "$REQUESTED"
run_sh 'curl -sS --max-time 10 --cacert $CA -H "Authorization: Bearer $OFFLINE" -o /dev/null -w "offline token: HTTP %{http_code}\n" $API/api/v1/namespaces/default/configmaps'
run_sh 'curl -sS --max-time 10 --cacert $CA -H "Authorization: Bearer $REQUESTED" -o /dev/null -w "requested token: HTTP %{http_code}\n" $API/api/v1/namespaces/default/configmaps'
