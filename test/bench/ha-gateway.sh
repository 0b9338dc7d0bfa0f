#!/usr/bin/env bash
# ha-gateway.sh compares kubegate's gateway with HAProxy in front of two
# `kubegate apiserver` processes sharing one etcd, when one of them dies
# (docs/kubernetes-behaviour.md, J.5). The systems take turns, round after
# round; in each run 16 client-go writers create ConfigMaps through the
# proxy, one API server is killed with SIGKILL, started again once the
# proxy reports it down and BENCH_DOWN seconds have passed, and the run
# ends BENCH_AFTER seconds after the proxy reports it up. Each run prints
# one JSON line: requests and failures in the fault window (in flight
# from the kill to the readmission), the time from the kill to the
# ejection and from serving again to the readmission.
#
# kubegate: kubegate gateway --upstream A --upstream B with the health
# check's defaults (inter 2s, fall 3, rise 2, timeout 1s), its view read
# from kubegate_gateway_upstream_healthy. HAProxy: TCP mode (TLS passes
# through, so the API servers authenticate the client certificate), option
# httpchk GET /readyz over TLS, inter 2s fall 3 rise 2, retries 3,
# option redispatch; its view read from its stats CSV.
#
# Usage: test/bench/ha-gateway.sh
# Environment: BENCH_ROUNDS [2], BENCH_BEFORE [5s], BENCH_DOWN [10s],
#   BENCH_AFTER [5s], BENCH_SYSTEMS ["kubegate haproxy"],
#   BENCH_OUT [a new /tmp/kubegate-ha.XXXXXX]
# Needs go and haproxy (apt-get install -y haproxy).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ROUNDS=${BENCH_ROUNDS:-2}
BEFORE=${BENCH_BEFORE:-5s}
DOWN=${BENCH_DOWN:-10s}
AFTER=${BENCH_AFTER:-5s}
SYSTEMS=${BENCH_SYSTEMS:-"kubegate haproxy"}
OUT=${BENCH_OUT:-$(mktemp -d /tmp/kubegate-ha.XXXXXX)}
mkdir -p "$OUT"

die() { echo "ha-gateway.sh: $*" >&2; exit 1; }
for sys in $SYSTEMS; do
	[[ $sys == haproxy ]] && { command -v haproxy >/dev/null || die "haproxy is missing: apt-get install -y haproxy"; }
done
command -v curl >/dev/null || die "curl is missing"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

echo "building kubegate, etcd and the driver into $OUT" >&2
(cd "$ROOT" && go build -o "$OUT/kubegate" ./cmd/kubegate && go build -o "$OUT/hagateway" ./test/bench/hagateway)
(cd "$ROOT/test/conformance/kube" && go build -o "$OUT/etcd" go.etcd.io/etcd/server/v3)
"$OUT/kubegate" pki init --dir "$OUT" >/dev/null
PKI=$OUT/pki
cat "$PKI/front-proxy-client.crt" "$PKI/front-proxy-client.key" >"$OUT/front-proxy-client.pem"

ETCD_PORT=$(free_port); ETCD_PEER=$(free_port)
"$OUT/etcd" --data-dir "$OUT/etcd-data" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
	--advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" \
	--initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-cluster "default=http://127.0.0.1:$ETCD_PEER" \
	>"$OUT/etcd.log" 2>&1 &
pids+=($!)

PORT_A=$(free_port); PORT_B=$(free_port)
start_apiserver() { # name port
	"$OUT/kubegate" apiserver --bind-address 127.0.0.1 --secure-port "$2" \
		--tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" --client-ca-file "$PKI/ca.crt" \
		--service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
		--requestheader-client-ca-file "$PKI/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
		--etcd-servers "http://127.0.0.1:$ETCD_PORT" >>"$OUT/apiserver-$1.log" 2>&1 &
	echo $! >"$OUT/apiserver-$1.pid"
	for _ in $(seq 300); do
		curl -sk --cert "$OUT/front-proxy-client.pem" -H 'X-Remote-User: probe' "https://127.0.0.1:$2/readyz" 2>/dev/null | grep -q ok && return 0
		sleep 0.1
	done
	die "apiserver $1 did not become ready; see $OUT/apiserver-$1.log"
}
start_apiserver a "$PORT_A"; pids+=("$(cat "$OUT/apiserver-a.pid")")
start_apiserver b "$PORT_B"

# Each system, with its view of B as UP or DOWN.
start_system() { # sys port
	case $1 in
	kubegate)
		"$OUT/kubegate" gateway --bind-address 127.0.0.1 --secure-port "$2" \
			--tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" --client-ca-file "$PKI/ca.crt" \
			--upstream "https://127.0.0.1:$PORT_A" --upstream "https://127.0.0.1:$PORT_B" --upstream-ca-file "$PKI/ca.crt" \
			--proxy-client-cert-file "$PKI/front-proxy-client.crt" --proxy-client-key-file "$PKI/front-proxy-client.key" \
			>"$OUT/kubegate.log" 2>&1 &
		HEALTH="curl -sk --cert $OUT/admin.pem https://127.0.0.1:$2/kubegate/metrics | grep -q '^kubegate_gateway_upstream_healthy{upstream=\"127.0.0.1:$PORT_B\"} 1' && echo UP || echo DOWN"
		;;
	haproxy)
		STATS=$(free_port)
		cat >"$OUT/haproxy.cfg" <<CFG
global
	maxconn 4096
defaults
	mode tcp
	timeout connect 5s
	timeout client 60s
	timeout server 60s
	timeout check 1s
	retries 3
	option redispatch
frontend api
	bind 127.0.0.1:$2
	default_backend apiservers
backend apiservers
	balance roundrobin
	option httpchk GET /readyz
	http-check send hdr X-Remote-User probe
	default-server check check-ssl verify none crt $OUT/front-proxy-client.pem inter 2s fall 3 rise 2
	server a 127.0.0.1:$PORT_A
	server b 127.0.0.1:$PORT_B
listen stats
	mode http
	bind 127.0.0.1:$STATS
	stats enable
	stats uri /
CFG
		haproxy -c -q -f "$OUT/haproxy.cfg" || die "haproxy rejected $OUT/haproxy.cfg"
		haproxy -db -f "$OUT/haproxy.cfg" >"$OUT/haproxy.log" 2>&1 &
		HEALTH="curl -s 'http://127.0.0.1:$STATS/;csv' | awk -F, '\$1==\"apiservers\" && \$2==\"b\" {print (\$18 ~ /^UP/) ? \"UP\" : \"DOWN\"}'"
		;;
	*) die "unknown system $1 (want kubegate, haproxy)" ;;
	esac
	SYS_PID=$!
}

# admin.pem: the client certificate of admin.conf, for kubegate's metrics.
python3 - "$OUT/admin.conf" "$OUT/admin.pem" <<'PY'
import base64, sys, re
text = open(sys.argv[1]).read()
out = []
for key in ("client-certificate-data", "client-key-data"):
    m = re.search(key + r":\s*(\S+)", text)
    out.append(base64.b64decode(m.group(1)).decode())
open(sys.argv[2], "w").write("".join(out))
PY

echo "round system result" >&2
for round in $(seq "$ROUNDS"); do
	for sys in $SYSTEMS; do
		port=$(free_port)
		start_system "$sys" "$port"
		for _ in $(seq 300); do [[ $(sh -c "$HEALTH") == UP ]] && break; sleep 0.1; done
		kubectl --kubeconfig "$OUT/admin.conf" config view --raw >/dev/null 2>&1 || true
		res=$("$OUT/hagateway" -system "$sys" -server "https://127.0.0.1:$port" -kubeconfig "$OUT/admin.conf" \
			-before "$BEFORE" -down "$DOWN" -after "$AFTER" \
			-kill "kill -9 \$(cat $OUT/apiserver-b.pid)" \
			-restart "$(declare -f start_apiserver die); OUT=$OUT PKI=$PKI ETCD_PORT=$ETCD_PORT; start_apiserver b $PORT_B" \
			-health "$HEALTH")
		echo "$round $res"
		echo "$res" >>"$OUT/results.jsonl"
		kill "$SYS_PID" 2>/dev/null || true
		wait "$SYS_PID" 2>/dev/null || true
	done
done
kill "$(cat "$OUT/apiserver-b.pid")" 2>/dev/null || true
echo "results in $OUT/results.jsonl" >&2
