#!/usr/bin/env bash
# workloads.sh times `kubectl create deployment --replicas=N` until all N
# pods are Running on M simulated nodes, on whole control planes side by
# side in one run, each with kubegate's scheduler and simulated nodes:
#   kubegate   `kubegate up --nodes M`: API server, gateway, scheduler,
#              simulated nodes and controllers in one process
#   kube       kube-apiserver + etcd, built by test/conformance/kube/build.sh,
#              with kubeadm's flags on a `kubegate pki init` tree, and
#              kube-controller-manager as kubeadm runs it (its client
#              limits at kubeadm's defaults: --kube-api-qps 20, burst 30,
#              per controller), `kubegate scheduler --kubeconfig
#              scheduler.conf` and `kubegate nodes simulate --count M`
#   kube-qps   the same, kube-controller-manager with --kube-api-qps and
#              --kube-api-burst BENCH_KCM_QPS: close to kubegate up's
#              controllers, which have no client limit
#   kubegate-split  kube-qps's layout on kubegate: `kubegate up` without
#              nodes (API server and gateway), `kubegate controllers` with
#              BENCH_KCM_QPS, and the same scheduler and nodes as kube's
# The scheduler outside kubegate up has kube-scheduler's client limits (50
# requests a second, burst 100) unless BENCH_SCHED_QPS changes them; kubegate
# up's own scheduler always has them.
# Every run starts its system afresh, waits for the M nodes to be Ready and
# schedulable and for the machine to be quiet, then runs deployload, which
# runs kubectl and watches the pods; it reads the CPU time and peak memory
# of the system's processes from /proc. The systems alternate, a
# different one first each round; the report gives medians and kubegate's
# time as a ratio to the others'.
#
# Usage: test/bench/workloads.sh        (from anywhere; see test/bench/README.md)
#
# Environment (defaults in brackets):
#   BENCH_ROUNDS [2]             rounds; each runs every system once
#   BENCH_SYSTEMS ["kube-qps kubegate"]  of kubegate, kube, kube-qps
#   BENCH_REPLICAS [10000]       replicas of the Deployment
#   BENCH_NODES [1000]           simulated nodes
#   BENCH_KCM_QPS [10000]        kube-qps's --kube-api-qps and --kube-api-burst, and kubegate-split's
#   BENCH_SCHED_QPS [50]         `kubegate scheduler --kube-api-qps`, burst twice that (-1: no limit)
#   BENCH_RUN_TIMEOUT [from BENCH_REPLICAS]  seconds the pods may take to be Running
#   BENCH_BUSY_MAX [25]          CPU busy % above which a run waits for quiet
#   BENCH_QUIET_WAIT [30]        seconds to wait for quiet before running anyway
#   BENCH_OUT [a new /tmp/kubegate-workbench.XXXXXX]  logs and results.jsonl
#   BENCH_MAX_SECONDS [from the above]  hard bound on the whole script
#   KUBE_BIN_DIR                 directory with kube-apiserver, kube-controller-manager
#                                and etcd (default: what test/conformance/kube/build.sh prints)
#   KUBEGATE_BIN                 kubegate binary (default: built from ./cmd/kubegate)
#   KUBECTL                      kubectl binary [kubectl]
#
# Exits non-zero if a system fails to start or its pods are not all Running
# within BENCH_RUN_TIMEOUT.
set -euo pipefail

ROUNDS=${BENCH_ROUNDS:-2}
SYSTEMS=${BENCH_SYSTEMS:-"kube-qps kubegate"}
REPLICAS=${BENCH_REPLICAS:-10000}
NODES=${BENCH_NODES:-1000}
KCM_QPS=${BENCH_KCM_QPS:-10000}
SCHED_QPS=${BENCH_SCHED_QPS:-50}
BUSY_MAX=${BENCH_BUSY_MAX:-25}
QUIET_WAIT=${BENCH_QUIET_WAIT:-30}
KUBECTL=${KUBECTL:-kubectl}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
ROOT=$(cd "$HERE/../.." && pwd)

read -ra SYSTEM_LIST <<<"$SYSTEMS"
for n in "$ROUNDS" "$REPLICAS" "$NODES" "$KCM_QPS" "$BUSY_MAX" "$QUIET_WAIT" ${BENCH_RUN_TIMEOUT:+"$BENCH_RUN_TIMEOUT"}; do
	[[ $n =~ ^[0-9]+$ ]] || { echo "workloads.sh: BENCH_* numbers must be whole numbers, got '$n'" >&2; exit 2; }
done
[[ $SCHED_QPS =~ ^(-1|[1-9][0-9]*)$ ]] || { echo "workloads.sh: BENCH_SCHED_QPS: want a positive whole number or -1, got '$SCHED_QPS'" >&2; exit 2; }
((REPLICAS > 0 && NODES > 0)) || { echo "workloads.sh: BENCH_REPLICAS and BENCH_NODES must be positive" >&2; exit 2; }
for sys in "${SYSTEM_LIST[@]}"; do
	case $sys in kubegate | kube | kube-qps | kubegate-split) ;; *)
		echo "workloads.sh: unknown system '$sys' in BENCH_SYSTEMS (want kubegate, kube, kube-qps, kubegate-split)" >&2
		exit 2
		;;
	esac
done
# The pods may take: a minute, plus 10 ms a pod (20 pods/s at worst: kube
# with kube-controller-manager's default client limits creates pods at
# about that rate).
RUN_TIMEOUT=${BENCH_RUN_TIMEOUT:-$((60 + REPLICAS / 10))}
# A run: starting and registering the nodes (up to SETUP_SECONDS), the
# wait for quiet, the pods, stopping.
SETUP_SECONDS=$((120 + NODES / 10))
RUN_SECONDS=$((SETUP_SECONDS + QUIET_WAIT + RUN_TIMEOUT + 30))
RUNS=$((ROUNDS * ${#SYSTEM_LIST[@]}))
MAX_SECONDS=${BENCH_MAX_SECONDS:-$((RUNS * RUN_SECONDS + 600))}

say() { printf '%s\n' "$*" >&2; }
die() { say "workloads.sh: $*"; exit 1; }

command -v go >/dev/null || die "missing: go (https://go.dev/dl)"
command -v "$KUBECTL" >/dev/null || die "missing: kubectl (https://kubernetes.io/docs/tasks/tools/), or set KUBECTL"

# --- process bookkeeping --------------------------------------------------
OUT=${BENCH_OUT:-$(mktemp -d /tmp/kubegate-workbench.XXXXXX)}
mkdir -p "$OUT"
PIDS=()   # the current run's processes
WATCHDOG=""
LOADER="" # deployload while it runs
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	[[ -n $WATCHDOG ]] && kill -TERM "$WATCHDOG" 2>/dev/null
	[[ -n $LOADER ]] && kill -TERM "$LOADER" 2>/dev/null
	stop_servers
	wait 2>/dev/null
	exit "$rc"
}
trap cleanup EXIT
trap 'say "workloads.sh: interrupted"; exit 130' INT
trap 'say "workloads.sh: stopped after the ${MAX_SECONDS}s bound (BENCH_MAX_SECONDS)"; exit 124' TERM
start_watchdog "$MAX_SECONDS"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# --- binaries -----------------------------------------------------------------
BIN=$OUT/bin
mkdir -p "$BIN"
say "building deployload${KUBEGATE_BIN:+ }${KUBEGATE_BIN:- and kubegate} into $BIN"
(cd "$ROOT" && go build -o "$BIN/deployload" ./test/bench/deployload) || die "go build ./test/bench/deployload failed"
if [[ -n ${KUBEGATE_BIN:-} ]]; then
	ln -sf "$(readlink -f "$KUBEGATE_BIN")" "$BIN/kubegate"
else
	(cd "$ROOT" && go build -o "$BIN/kubegate" ./cmd/kubegate) || die "go build ./cmd/kubegate failed"
fi
KG=$BIN/kubegate
if [[ " ${SYSTEM_LIST[*]} " == *" kube"[\ -]* ]]; then
	if [[ -z ${KUBE_BIN_DIR:-} ]]; then
		KUBE_BIN_DIR=$("$ROOT/test/conformance/kube/build.sh") || die "test/conformance/kube/build.sh failed"
	fi
	for b in kube-apiserver kube-controller-manager etcd; do
		[[ -x $KUBE_BIN_DIR/$b ]] || die "no $b in KUBE_BIN_DIR=$KUBE_BIN_DIR"
	done
fi

# --- systems --------------------------------------------------------------------
# kubectl_retry KUBECONFIG ARGS...: kubectl until it succeeds, up to a minute
# (kube-apiserver answers before its RBAC roles are in place).
kubectl_retry() {
	local conf=$1 i
	shift
	for ((i = 0; i < 120; i++)); do
		"$KUBECTL" --kubeconfig "$conf" "$@" >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	"$KUBECTL" --kubeconfig "$conf" "$@"
}

# start_sched_nodes DIR KUBECONFIG: kubegate's scheduler on DIR/scheduler.conf
# and the simulated nodes on KUBECONFIG; adds them to MEASURED.
start_sched_nodes() {
	local dir=$1 burst=$((SCHED_QPS * 2))
	((SCHED_QPS > 0)) || burst=0
	start "$dir/scheduler.log" "$KG" scheduler --kubeconfig "$dir/scheduler.conf" --kube-api-qps "$SCHED_QPS" --kube-api-burst "$burst"
	MEASURED+=,scheduler=$LAST_PID
	start "$dir/nodes.log" "$KG" nodes simulate --kubeconfig "$2" --count "$NODES"
	MEASURED+=,nodes=$LAST_PID
}

# launch SYS DIR: starts SYS afresh in DIR; sets MEASURED (its processes,
# NAME=PID,…) and KUBECONFIG_FILE.
launch() {
	local sys=$1 dir=$2 port pki qps=20 burst=30
	port=$(free_port)
	mkdir -p "$dir"
	case $sys in
	kubegate)
		start "$dir/kubegate.log" "$KG" up --dir "$dir/cluster" --secure-port "$port" --nodes "$NODES"
		MEASURED=kubegate=$LAST_PID
		KUBECONFIG_FILE=$dir/cluster/admin.conf
		wait_port "$port" "$LAST_PID" "$dir/kubegate.log" || return 1
		;;
	kube | kube-qps)
		[[ $sys == kube-qps ]] && qps=$KCM_QPS burst=$KCM_QPS
		pki_init "$dir" "$port" || return 1
		start_etcd "$dir" || return 1
		start_kube_apiserver "$dir" "$port"
		MEASURED=kube-apiserver=$LAST_PID,etcd=$ETCD_PID
		wait_port "$port" "$LAST_PID" "$dir/kube-apiserver.log" || return 1
		# Ready: its RBAC roles are in place. admin.conf's group gets
		# cluster-admin, as kubeadm init binds it.
		kubectl_retry "$dir/super-admin.conf" get --raw=/readyz || return 1
		kubectl_retry "$dir/super-admin.conf" create clusterrolebinding kubeadm:cluster-admins \
			--clusterrole=cluster-admin --group=kubeadm:cluster-admins || return 1
		pki=$dir/pki
		# As kubeadm runs it, less what needs a port or certificates of its
		# own: one instance, no leader election, no serving port.
		start "$dir/kube-controller-manager.log" "$KUBE_BIN_DIR/kube-controller-manager" \
			--kubeconfig="$dir/controller-manager.conf" \
			--authentication-kubeconfig="$dir/controller-manager.conf" \
			--authorization-kubeconfig="$dir/controller-manager.conf" \
			--use-service-account-credentials=true --controllers='*' --leader-elect=false \
			--bind-address=127.0.0.1 --secure-port=0 \
			--client-ca-file="$pki/ca.crt" --requestheader-client-ca-file="$pki/front-proxy-ca.crt" \
			--root-ca-file="$pki/ca.crt" --service-account-private-key-file="$pki/sa.key" \
			--service-cluster-ip-range=10.96.0.0/12 \
			--kube-api-qps="$qps" --kube-api-burst="$burst"
		MEASURED+=,kube-controller-manager=$LAST_PID
		start_sched_nodes "$dir" "$dir/admin.conf"
		KUBECONFIG_FILE=$dir/admin.conf
		;;
	kubegate-split)
		start "$dir/kubegate.log" "$KG" up --dir "$dir/cluster" --secure-port "$port" --nodes 0
		MEASURED=kubegate=$LAST_PID
		KUBECONFIG_FILE=$dir/cluster/admin.conf
		wait_port "$port" "$LAST_PID" "$dir/kubegate.log" || return 1
		# admin.conf, as kubegate up runs its controllers: kubegate's
		# bootstrap policy has no roles for kube's controller accounts.
		start "$dir/controllers.log" "$KG" controllers --kubeconfig "$KUBECONFIG_FILE" \
			--kube-api-qps "$KCM_QPS" --kube-api-burst "$KCM_QPS"
		MEASURED+=,controllers=$LAST_PID
		start_sched_nodes "$dir/cluster" "$KUBECONFIG_FILE"
		;;
	esac
}

# --- runs -------------------------------------------------------------------
RESULTS=$OUT/results.jsonl
: >"$RESULTS"
FAILED=()
TICK_HZ=$(getconf CLK_TCK)
n=${#SYSTEM_LIST[@]}
say "running $ROUNDS round(s) of ${SYSTEM_LIST[*]}: a Deployment of $REPLICAS replicas on $NODES nodes (bound ${MAX_SECONDS}s); results in $RESULTS"
for ((r = 0; r < ROUNDS; r++)); do
	for ((k = 0; k < n; k++)); do
		sys=${SYSTEM_LIST[$(((k + r) % n))]}
		dir=$OUT/round$((r + 1))-$sys
		if ! launch "$sys" "$dir"; then
			FAILED+=("round $((r + 1)) $sys: did not start (see $dir)")
			stop_servers
			continue
		fi
		rc=0
		timeout "$RUN_SECONDS" "$BIN/deployload" -kubeconfig "$KUBECONFIG_FILE" -kubectl "$(command -v "$KUBECTL")" \
			-pids "$MEASURED" -clk-tck "$TICK_HZ" -system "$sys" -round $((r + 1)) \
			-replicas "$REPLICAS" -nodes "$NODES" -setup-timeout "${SETUP_SECONDS}s" -timeout "${RUN_TIMEOUT}s" \
			-busy-max "$BUSY_MAX" -quiet-wait "${QUIET_WAIT}s" \
			>"$OUT/run.json" 2> >(tee "$dir/deployload.log" | sed 's/^/  /' >&2) &
		LOADER=$!
		wait "$LOADER" || rc=$?
		LOADER=""
		for p in ${MEASURED//,/ }; do
			kill -0 "${p#*=}" 2>/dev/null || FAILED+=("round $((r + 1)) $sys: ${p%=*} exited during the run (see $dir)")
		done
		stop_servers
		rm -rf "$dir/etcd" "$dir/cluster/state.db"
		[[ -s $OUT/run.json ]] && cat "$OUT/run.json" >>"$RESULTS"
		((rc == 0)) || FAILED+=("round $((r + 1)) $sys: deployload failed, exit $rc (see $dir/deployload.log)")
	done
done

# --- report -----------------------------------------------------------------
echo "kubegate workload benchmark: $ROUNDS round(s), kubectl create deployment --replicas=$REPLICAS on $NODES simulated nodes, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
if [[ -n ${KUBE_BIN_DIR:-} ]]; then
	echo "$("$KUBE_BIN_DIR/kube-apiserver" --version)  etcd $("$KUBE_BIN_DIR/etcd" --version | sed -n 's/^etcd Version: //p')  $("$KG" version 2>/dev/null | head -n1)  $(go version | cut -d' ' -f3)"
	echo "kube-controller-manager --kube-api-qps and --kube-api-burst: kube 20 and 30 (kubeadm's), kube-qps $KCM_QPS"
fi
echo "kubegate scheduler --kube-api-qps $SCHED_QPS outside kubegate up (inside: 50); kubegate-split: kubegate controllers --kube-api-qps $KCM_QPS"
"$BIN/deployload" -report "$RESULTS" -goal-systems kubegate,kubegate-split -goal 0.5 || FAILED+=("deployload -report failed")
echo "results: $RESULTS"
if ((${#FAILED[@]} > 0)); then
	printf 'FAIL: %s\n' "${FAILED[@]}"
	exit 1
fi
echo "PASS: every system started and ran every pod"
