#!/usr/bin/env bash
# From nothing to an explained, scheduled pod, then a Deployment: start a
# local cluster with three simulated nodes, take its admin kubeconfig
# apart, call the API with curl and a client certificate, post a pod, watch
# it get scheduled and running, and ask the scheduler why it went where it
# did. Then run the same app as a Deployment of three replicas: its
# ReplicaSet, its pods spread over the nodes, a rolling update to a new
# image, and a rollback to the first ReplicaSet.
. "$(dirname "$0")/../lib.sh"
example_init 120
cp "$EXAMPLES/walkthrough/app.json" .

step "start the cluster: PKI, API server, gateway, scheduler and three nodes"
PORT=$(free_port)
background up.log kubegate up --dir cluster --secure-port "$PORT"
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

IMAGE=registry.cn-hangzhou.aliyuncs.com/kube-easy/app
step "the same app as a Deployment of three replicas (the pod above makes way)"
run kubectl delete pod app --request-timeout=10s --timeout=30s
run kubectl create deployment app --image="$IMAGE:latest" --replicas=3 --port=2580 --request-timeout=10s -- app
run kubectl annotate deployment/app kubernetes.io/change-cause="image app:latest" --request-timeout=10s
run kubectl rollout status deployment/app --request-timeout=10s --timeout=60s

step "its ReplicaSet, named after the pod template's hash, made the pods"
run kubectl get deployment app --request-timeout=10s
run kubectl get rs --request-timeout=10s
run kubectl get pods -o wide --request-timeout=10s

# One of them, the newest: unlike the lone pod above, it belongs to a
# ReplicaSet, so PodTopologySpread's default constraints score it, ranking
# lower the nodes that already run one of the ReplicaSet's pods.
POD=$(kubectl get pods -l app=app --sort-by=.metadata.creationTimestamp --request-timeout=10s \
	-o jsonpath='{.items[-1:].metadata.name}')
step "why $POD went to its node: PodTopologySpread spreads a ReplicaSet's pods"
run kubegate scheduler explain "$POD" --kubeconfig cluster/admin.conf

# Revision and image of every ReplicaSet, in revision order.
REVISION='.metadata.annotations.deployment\.kubernetes\.io/revision'
RS_COLUMNS="NAME:.metadata.name,REVISION:$REVISION,DESIRED:.spec.replicas,IMAGE:.spec.template.spec.containers[0].image"

step "a rolling update to a new image (the nodes are simulated: nothing is pulled)"
run kubectl set image deployment/app app="$IMAGE:v2" --request-timeout=10s
run kubectl annotate deployment/app kubernetes.io/change-cause="image app:v2" --overwrite --request-timeout=10s
run kubectl rollout status deployment/app --request-timeout=10s --timeout=60s
run kubectl get rs -o custom-columns="$RS_COLUMNS" --sort-by="$REVISION" --request-timeout=10s
run kubectl rollout history deployment/app --request-timeout=10s

step "roll back: the first ReplicaSet scales up again and becomes the newest revision"
run kubectl rollout undo deployment/app --request-timeout=10s
run kubectl rollout status deployment/app --request-timeout=10s --timeout=60s
run kubectl get rs -o custom-columns="$RS_COLUMNS" --sort-by="$REVISION" --request-timeout=10s
run kubectl rollout history deployment/app --request-timeout=10s
run kubectl get pods -o wide --request-timeout=10s
