#!/usr/bin/env bash
# ha.sh: acknowledged creates per second on the highly available topology
# of examples/ha, side by side in one run with the single-process kubegate
# and with kube-apiserver on the same kind of 3-member etcd, with one load
# program (apiload: client-go speaking protobuf, as controllers do):
#   ha          examples/ha/run.sh (3 etcd members, 2 kubegate API servers,
#               2 gateways each forwarding to both, 2 controller managers
#               and 2 schedulers, no simulated nodes); the clients go
#               through gateway 1 with admin.conf
#   kubegate-up `kubegate up` (bbolt), through its gateway port
#   kubegate-etcd3 one `kubegate apiserver` on a 3-member etcd started as
#               kube's is: the same storage as kube, nothing else
#   kube        kube-apiserver v1.37 (test/conformance/kube/build.sh) with
#               kubeadm's flags on a 3-member etcd over mutual TLS started
#               as examples/ha starts it
# Each run starts the system afresh, creates BENCH_PODS pods, lists them,
# then times pod creates with 16 and with 64 concurrent clients; the server
# CPU each create costs is read from /proc for the measured processes:
# etcd, API servers and gateways (ha), etcd and kube-apiserver (kube), the
# one process (kubegate-up, whose controllers run in it too). The systems
# alternate, a different one first each round; the report gives medians and
# the ratios to kube.
#
# Usage: test/bench/ha.sh   (as root: examples/ha adds two addresses to lo)
#
# Environment (defaults in brackets):
#   BENCH_ROUNDS [3]  BENCH_SYSTEMS ["ha kubegate-up kubegate-etcd3 kube"]
#   BENCH_PODS [1000]  BENCH_CLIENTS [16,64]  BENCH_CREATE_SECONDS [10]
#   BENCH_CREATE_MAX [6000]  BENCH_LISTS [3]
#   BENCH_OUT [a new /tmp/kubegate-habench.XXXXXX]  logs and results.jsonl
#   KUBE_BIN_DIR      kube-apiserver and etcd (default: what build.sh prints)
#   KUBEGATE_BIN      kubegate binary (default: built from ./cmd/kubegate)
#
# Exits non-zero if a system fails to start or a request fails.
set -euo pipefail

ROUNDS=${BENCH_ROUNDS:-3}
read -r -a SYSTEM_LIST <<<"${BENCH_SYSTEMS:-ha kubegate-up kubegate-etcd3 kube}"
PODS=${BENCH_PODS:-1000}
CLIENTS=${BENCH_CLIENTS:-16,64}
CREATE_SECONDS=${BENCH_CREATE_SECONDS:-10}
CREATE_MAX=${BENCH_CREATE_MAX:-6000}
LISTS=${BENCH_LISTS:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/test/bench/lib.sh"

say() { printf '%s\n' "$*" >&2; }
die() {
	say "ha.sh: $*"
	exit 1
}
for sys in "${SYSTEM_LIST[@]}"; do
	case $sys in
	ha | kubegate-up | kubegate-etcd3 | kube) ;;
	*) die "unknown system '$sys' in BENCH_SYSTEMS (want ha, kubegate-up, kubegate-etcd3, kube)" ;;
	esac
done

OUT=${BENCH_OUT:-$(mktemp -d /tmp/kubegate-habench.XXXXXX)}
mkdir -p "$OUT"
PIDS=()
HA_DIR=""
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	stop_system
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BIN=$OUT/bin
mkdir -p "$BIN"
say "building apiload (and kubegate unless KUBEGATE_BIN is set) into $BIN"
(cd "$ROOT" && go build -o "$BIN/apiload" ./test/bench/apiload)
if [[ -n ${KUBEGATE_BIN:-} ]]; then
	ln -sf "$(readlink -f "$KUBEGATE_BIN")" "$BIN/kubegate"
else
	(cd "$ROOT" && go build -o "$BIN/kubegate" ./cmd/kubegate)
fi
KG=$BIN/kubegate
if [[ -z ${KUBE_BIN_DIR:-} ]]; then
	KUBE_BIN_DIR=$("$ROOT/test/conformance/kube/build.sh") || die "test/conformance/kube/build.sh failed"
fi
[[ -x $KUBE_BIN_DIR/kube-apiserver && -x $KUBE_BIN_DIR/etcd ]] || die "no kube-apiserver and etcd in KUBE_BIN_DIR=$KUBE_BIN_DIR"

stop_system() {
	if [[ -n $HA_DIR ]]; then
		"$ROOT/examples/ha/run.sh" stop "$HA_DIR" || true
		HA_DIR=""
	fi
	stop_servers
}

# start_etcd3 DIR: three etcd members on DIR's tree, as examples/ha runs
# them; sets ETCD_URL (a comma list) and ETCD_PIDS.
start_etcd3() {
	local dir=$1 pki=$1/pki i cluster="" client=() peer=() pids=()
	for i in 0 1 2; do
		client+=("$(free_port)")
		peer+=("$(free_port)")
		cluster+="${cluster:+,}m$i=https://127.0.0.1:${peer[i]}"
	done
	ETCD_URL="" ETCD_PIDS=""
	for i in 0 1 2; do
		start "$dir/etcd-$i.log" "$KUBE_BIN_DIR/etcd" --name "m$i" --data-dir "$dir/etcd-$i" \
			--listen-client-urls "https://127.0.0.1:${client[i]}" --advertise-client-urls "https://127.0.0.1:${client[i]}" \
			--listen-peer-urls "https://127.0.0.1:${peer[i]}" --initial-advertise-peer-urls "https://127.0.0.1:${peer[i]}" \
			--initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token kubegate-ha \
			--client-cert-auth --trusted-ca-file "$pki/etcd/ca.crt" --cert-file "$pki/etcd/server.crt" --key-file "$pki/etcd/server.key" \
			--peer-client-cert-auth --peer-trusted-ca-file "$pki/etcd/ca.crt" \
			--peer-cert-file "$pki/etcd/peer.crt" --peer-key-file "$pki/etcd/peer.key" \
			--snapshot-count 10000 --log-level warn
		ETCD_URL+="${ETCD_URL:+,}https://127.0.0.1:${client[i]}"
		ETCD_PIDS+="${ETCD_PIDS:+,}$LAST_PID"
		pids+=("$LAST_PID")
	done
	for i in 0 1 2; do
		wait_port "${client[i]}" "${pids[i]}" "$dir/etcd-$i.log" || return 1
	done
}

# launch SYS DIR: start SYS afresh in DIR; sets MEASURED (the processes
# whose CPU counts, comma-separated), KUBECONFIG_FILE and BOOTSTRAP.
launch() {
	local sys=$1 dir=$2 port
	mkdir -p "$dir"
	BOOTSTRAP=""
	case $sys in
	ha)
		HA_DIR=$dir/topology
		KUBEGATE=$KG ETCD=$KUBE_BIN_DIR/etcd HA_NODES=0 "$ROOT/examples/ha/run.sh" "$HA_DIR" >"$dir/run.log" 2>&1 ||
			{ tail -20 "$dir/run.log" >&2; return 1; }
		MEASURED=$(cat "$HA_DIR"/run/{etcd,apiserver,gateway}-*.pid | paste -sd,)
		KUBECONFIG_FILE=$HA_DIR/admin.conf
		;;
	kubegate-up)
		port=$(free_port)
		start "$dir/kubegate.log" "$KG" up --dir "$dir/cluster" --secure-port "$port" --nodes 0
		MEASURED=$LAST_PID
		KUBECONFIG_FILE=$dir/cluster/admin.conf
		wait_port "$port" "$LAST_PID" "$dir/kubegate.log" || return 1
		;;
	kubegate-etcd3)
		# One kubegate apiserver on the 3-member etcd, as kube runs: the
		# same storage and no gateway, controllers or schedulers.
		port=$(free_port)
		pki_init "$dir" "$port" || return 1
		start_etcd3 "$dir" || return 1
		local pki=$dir/pki
		start "$dir/kubegate.log" "$KG" apiserver --bind-address 127.0.0.1 --secure-port "$port" \
			--etcd-servers "$ETCD_URL" --etcd-cafile "$pki/etcd/ca.crt" \
			--etcd-certfile "$pki/apiserver-etcd-client.crt" --etcd-keyfile "$pki/apiserver-etcd-client.key" \
			--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
			--client-ca-file "$pki/ca.crt" \
			--service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
			--requestheader-client-ca-file "$pki/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client
		MEASURED=$LAST_PID,$ETCD_PIDS
		KUBECONFIG_FILE=$dir/admin.conf
		wait_port "$port" "$LAST_PID" "$dir/kubegate.log" || return 1
		;;
	kube)
		port=$(free_port)
		pki_init "$dir" "$port" || return 1
		start_etcd3 "$dir" || return 1
		start_kube_apiserver "$dir" "$port"
		MEASURED=$LAST_PID,$ETCD_PIDS
		KUBECONFIG_FILE=$dir/admin.conf
		BOOTSTRAP=$dir/super-admin.conf
		;;
	esac
}

RESULTS=$OUT/results.jsonl
: >"$RESULTS"
FAILED=()
n=${#SYSTEM_LIST[@]}
say "running $ROUNDS round(s) of ${SYSTEM_LIST[*]}: $PODS pods, create phases of ${CREATE_SECONDS}s or $CREATE_MAX with $CLIENTS clients; results in $RESULTS"
for ((r = 0; r < ROUNDS; r++)); do
	for ((k = 0; k < n; k++)); do
		sys=${SYSTEM_LIST[$(((k + r) % n))]}
		dir=$OUT/round$((r + 1))-$sys
		say "round $((r + 1)): $sys"
		if ! launch "$sys" "$dir"; then
			FAILED+=("round $((r + 1)) $sys: did not start (see $dir)")
			stop_system
			continue
		fi
		args=(-kubeconfig "$KUBECONFIG_FILE" -pids "$MEASURED" -clk-tck "$(getconf CLK_TCK)" -system "$sys" -round $((r + 1))
			-pods "$PODS" -clients "$CLIENTS" -create-for "${CREATE_SECONDS}s" -create-max "$CREATE_MAX" -lists "$LISTS" -watchers 0)
		[[ -n $BOOTSTRAP ]] && args+=(-bootstrap-kubeconfig "$BOOTSTRAP")
		rc=0
		"$BIN/apiload" "${args[@]}" >"$OUT/run.json" 2> >(tee "$dir/apiload.log" | sed 's/^/  /' >&2) || rc=$?
		for pid in ${MEASURED//,/ }; do
			kill -0 "$pid" 2>/dev/null || FAILED+=("round $((r + 1)) $sys: process $pid exited during the run (see $dir)")
		done
		stop_system
		rm -rf "$dir"/etcd-* "$dir/cluster/state.db" "$dir"/topology/data
		if [[ ! -s $OUT/run.json ]]; then
			FAILED+=("round $((r + 1)) $sys: apiload printed no result (exit $rc; see $dir/apiload.log)")
			continue
		fi
		((rc == 0)) || FAILED+=("round $((r + 1)) $sys: failed requests (see $dir/apiload.log)")
		cat "$OUT/run.json" >>"$RESULTS"
	done
done

echo "kubegate HA benchmark: $ROUNDS round(s), $PODS pods, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "$("$KUBE_BIN_DIR/kube-apiserver" --version)  etcd $("$KUBE_BIN_DIR/etcd" --version | sed -n 's/^etcd Version: //p')  $("$KG" version 2>/dev/null | head -n1)  $(go version | cut -d' ' -f3)"
ref=kube
[[ " ${SYSTEM_LIST[*]} " == *" kube "* ]] || ref=${SYSTEM_LIST[0]}
report_rc=0
"$BIN/apiload" -report "$RESULTS" -ref "$ref" || report_rc=$?
((report_rc < 2)) || FAILED+=("apiload -report failed")
echo "results: $RESULTS"
if ((${#FAILED[@]} > 0)); then
	printf 'FAIL: %s\n' "${FAILED[@]}"
	exit 1
fi
echo "PASS: every system started and no request failed"
