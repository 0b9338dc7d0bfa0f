#!/usr/bin/env bash
# Kubernetes The Hard Way's certificates and kubeconfigs in one command, then
# `pki check` on a tree built the guide's way, by hand, with two of the
# mistakes people make following it.
. "$(dirname "$0")/../lib.sh"
example_init 60
cp "$EXAMPLES/hard-way/cluster.yaml" .

step "the whole certificate and kubeconfig set from a cluster spec"
cat cluster.yaml
run kubegate pki init --dir hard-way --config cluster.yaml
run_sh "find hard-way -type f | sort"
run kubegate pki check --dir hard-way --service-cidr 10.32.0.0/24

step "the API server certificate names every address and service name"
run openssl x509 -in hard-way/pki/apiserver.crt -noout -subject -ext subjectAltName

step "each worker's kubelet identity"
for n in worker-0 worker-1 worker-2; do
	run_sh "kubegate kubeconfig inspect hard-way/kubelet-$n.conf | grep -E 'Server:|CN = system:node|Groups:'"
done

step "the guide's kube-proxy kubeconfig, if you run kube-proxy with a certificate"
run kubegate kubeconfig create --dir hard-way --user system:kube-proxy --org system:node-proxier \
	--server https://203.0.113.10:6443 --out hard-way/kube-proxy.conf

step "a tree built the guide's way, with openssl and kubectl config, and two mistakes"
# Laid out under the kubeadm names pki check knows (see README.md for the
# mapping): ca.pem is pki/ca.crt, kubernetes.pem is pki/apiserver.crt and
# kube-scheduler.kubeconfig is scheduler.conf.
mkdir -p guide/pki
cat >guide/kubernetes.cnf <<'CNF'
[ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
# the guide's host list, with kubernetes.svc.cluster.local where
# kubernetes.default.svc.cluster.local belongs, and no service IP 10.32.0.1
subjectAltName = DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster, DNS:kubernetes.svc.cluster.local, IP:10.240.0.10, IP:10.240.0.11, IP:10.240.0.12, IP:203.0.113.10, IP:127.0.0.1
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
CNF
run openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj "/C=US/L=Portland/O=Kubernetes/OU=CA/ST=Oregon/CN=Kubernetes" \
	-addext "keyUsage = critical, keyCertSign, cRLSign" \
	-keyout guide/pki/ca.key -out guide/pki/ca.crt 2>/dev/null
run openssl req -new -newkey rsa:2048 -nodes -subj "/C=US/L=Portland/O=Kubernetes/OU=Kubernetes The Hard Way/ST=Oregon/CN=kubernetes" \
	-keyout guide/pki/apiserver.key -out guide/apiserver.csr 2>/dev/null
run openssl x509 -req -in guide/apiserver.csr -CA guide/pki/ca.crt -CAkey guide/pki/ca.key -CAcreateserial -days 365 \
	-extfile guide/kubernetes.cnf -extensions ext -out guide/pki/apiserver.crt 2>/dev/null
# The scheduler's group typed with the system: prefix twice.
run openssl req -new -newkey rsa:2048 -nodes -subj "/C=US/L=Portland/O=system:system:kube-scheduler/OU=Kubernetes The Hard Way/ST=Oregon/CN=system:kube-scheduler" \
	-keyout guide/kube-scheduler.key -out guide/kube-scheduler.csr 2>/dev/null
run openssl x509 -req -in guide/kube-scheduler.csr -CA guide/pki/ca.crt -CAkey guide/pki/ca.key -CAcreateserial -days 365 \
	-extfile guide/kubernetes.cnf -extensions client -out guide/kube-scheduler.crt 2>/dev/null
export KUBECONFIG=guide/scheduler.conf
run kubectl config set-cluster kubernetes-the-hard-way --certificate-authority=guide/pki/ca.crt --embed-certs=true --server=https://127.0.0.1:6443
run kubectl config set-credentials system:kube-scheduler --client-certificate=guide/kube-scheduler.crt --client-key=guide/kube-scheduler.key --embed-certs=true
run kubectl config set-context default --cluster=kubernetes-the-hard-way --user=system:kube-scheduler
run kubectl config use-context default
unset KUBECONFIG

step "pki check finds both mistakes and exits non-zero"
run_expect_fail kubegate pki check --dir guide --service-cidr 10.32.0.0/24
