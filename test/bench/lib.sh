# Shell helpers the bench scripts share; sourced, not run.

# free_port: a random loopback port nothing listens on and not yet handed out.
USED_PORTS=" "
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 40000))
		[[ $USED_PORTS == *" $p "* ]] && continue
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
		USED_PORTS+="$p "
		echo "$p"
		return
	done
}

# start_watchdog SECONDS: after SECONDS, send the script TERM, whose trap
# ends the run; sets WATCHDOG to kill it earlier.
start_watchdog() {
	(
		trap 'kill "$s" 2>/dev/null; exit 0' TERM
		sleep "$1" &
		s=$!
		wait "$s" && kill -TERM $$
	) &
	WATCHDOG=$!
}

# The helpers below run servers: the script defines say, sets PIDS=() and
# calls stop_servers when a run ends and from its EXIT trap; pki_init needs
# KG (a kubegate binary), start_etcd and start_kube_apiserver KUBE_BIN_DIR.

# start LOG CMD...: runs CMD in the background, logging to LOG; sets LAST_PID.
start() {
	local log=$1
	shift
	"$@" >"$log" 2>&1 &
	LAST_PID=$!
	PIDS+=("$LAST_PID")
}

# stop_servers: TERM the current run's servers, KILL what is left after 5 s.
stop_servers() {
	local pid i
	for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do
		for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	PIDS=()
}

# wait_port PORT PID LOG: until something accepts on 127.0.0.1:PORT.
wait_port() {
	local i
	for ((i = 0; i < 300; i++)); do
		kill -0 "$2" 2>/dev/null || { tail -n 20 "$3" >&2; return 1; }
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	say "nothing listening on 127.0.0.1:$1 after 30s (see $3)"
	return 1
}

# pki_init DIR PORT: a kubeadm-style tree whose kubeconfigs point at PORT.
pki_init() {
	"$KG" pki init --dir "$1" --server "https://127.0.0.1:$2" >"$1/pki-init.log" 2>&1 || { cat "$1/pki-init.log" >&2; return 1; }
}

# start_etcd DIR: etcd on the tree's etcd certificates, as kubeadm runs it;
# sets ETCD_URL and ETCD_PID.
start_etcd() {
	local dir=$1 client peer
	client=$(free_port) peer=$(free_port)
	ETCD_URL=https://127.0.0.1:$client
	local peer_url=https://127.0.0.1:$peer pki=$dir/pki
	start "$dir/etcd.log" "$KUBE_BIN_DIR/etcd" --name=bench --data-dir="$dir/etcd" \
		--listen-client-urls="$ETCD_URL" --advertise-client-urls="$ETCD_URL" \
		--listen-peer-urls="$peer_url" --initial-advertise-peer-urls="$peer_url" \
		--initial-cluster="bench=$peer_url" \
		--cert-file="$pki/etcd/server.crt" --key-file="$pki/etcd/server.key" \
		--trusted-ca-file="$pki/etcd/ca.crt" --client-cert-auth \
		--peer-cert-file="$pki/etcd/peer.crt" --peer-key-file="$pki/etcd/peer.key" \
		--peer-trusted-ca-file="$pki/etcd/ca.crt" --peer-client-cert-auth \
		--log-level=warn
	ETCD_PID=$LAST_PID
	wait_port "$client" "$ETCD_PID" "$dir/etcd.log"
}

# start_kube_apiserver DIR PORT: kube-apiserver on DIR's tree (pki_init)
# and etcd (start_etcd) with kubeadm's flags, as
# test/conformance/servers_test.go runs it; sets LAST_PID.
start_kube_apiserver() {
	local dir=$1 port=$2 pki=$1/pki
	start "$dir/kube-apiserver.log" "$KUBE_BIN_DIR/kube-apiserver" \
		--advertise-address=127.0.0.1 --bind-address=127.0.0.1 --secure-port="$port" \
		--etcd-servers="$ETCD_URL" --etcd-cafile="$pki/etcd/ca.crt" \
		--etcd-certfile="$pki/apiserver-etcd-client.crt" --etcd-keyfile="$pki/apiserver-etcd-client.key" \
		--tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
		--client-ca-file="$pki/ca.crt" \
		--kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
		--service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--proxy-client-cert-file="$pki/front-proxy-client.crt" --proxy-client-key-file="$pki/front-proxy-client.key" \
		--requestheader-client-ca-file="$pki/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
		--requestheader-extra-headers-prefix=X-Remote-Extra- --requestheader-group-headers=X-Remote-Group \
		--requestheader-username-headers=X-Remote-User \
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --allow-privileged=true \
		--service-cluster-ip-range=10.96.0.0/12 --enable-bootstrap-token-auth=true \
		--endpoint-reconciler-type=none
}
