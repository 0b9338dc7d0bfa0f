#!/usr/bin/env bash
# apiserver.sh compares kubegate's API server with kube-apiserver, side by
# side in one run with one load program (apiload, client-go speaking
# protobuf as controllers do):
#   kube           kube-apiserver v1.37 + etcd, built by test/conformance/kube/build.sh,
#                  with kubeadm's flags on a `kubegate pki init` tree
#   kubegate-up    `kubegate up` (bbolt), clients on its gateway port with admin.conf
#   kubegate-etcd  `kubegate apiserver` on its own etcd, the same flags as kube
#   kubegate-up-base  `kubegate up` as kubegate-up, with the binary at
#                  KUBEGATE_BASE_BIN (built from another commit, say): before
#                  and after in one run
# Every run starts the system afresh (new PKI tree, new store), creates
# BENCH_PODS pods, waits for the machine to be quiet again, times LISTs of them in
# JSON and in protobuf with the server CPU each takes (the first apart: a server may keep what it encoded
# for the next), reads the resident memory of the server's
# processes, measures pod creates/s with 16 and with 64 concurrent clients
# and the delay from a create's answer to 100 watchers' ADDED events, and
# reads the server's CPU time from /proc.
# With BENCH_KIND=cr the objects are custom resources instead of pods: the
# CustomResourceDefinition of apiload/crd.yaml (a structural schema, a
# default, an enum, a pattern, two CEL rules) is applied to every system
# and waited on until Established; the custom resources are created with
# client-go's dynamic client and listed in JSON, the only encoding
# custom resources have; there is no watch phase.
# The systems alternate, a different one first each round; the report gives
# medians and the ratios the project's goals are stated in.
#
# Usage: test/bench/apiserver.sh        (from anywhere; see test/bench/README.md)
#
# Environment (defaults in brackets):
#   BENCH_ROUNDS [3]             rounds; each runs every system once
#   BENCH_SYSTEMS ["kube kubegate-up kubegate-etcd"]
#   BENCH_KIND [pods]            pods, or cr: custom resources of apiload/crd.yaml
#   BENCH_PODS [10000]           pods created first, then listed; RSS is read after
#   BENCH_FILL_CLIENTS [64]      concurrent clients that create them
#   BENCH_CLIENTS [16,64; cr: 16]  concurrent clients of each timed create phase
#   BENCH_CREATE_SECONDS [10]    longest timed create phase ...
#   BENCH_CREATE_MAX [6000]      ... or this many pods, whichever comes first
#   BENCH_LISTS [5]              timed LISTs per content type (median)
#   BENCH_LIST_GZIP [1]          offer gzip on LISTs, as client-go does (0: do not)
#   BENCH_WATCHERS [100; cr: 0]  watchers in the fan-out (0 skips it; cr has none)
#   BENCH_WATCH_EVENTS [100]     pods created while they watch ...
#   BENCH_WATCH_INTERVAL_MS [20] ... this far apart
#   BENCH_SHARE_CONN [0]         1: every client of a phase on one connection
#   BENCH_BUSY_MAX [25]          CPU busy % above which a run waits for quiet
#   BENCH_QUIET_WAIT [10]        seconds to wait for quiet before running anyway
#   BENCH_STEAL_MAX [10]         % of CPU time stolen during a run above which ...
#   BENCH_STEAL_RETRIES [1]      ... the run is repeated, at most this many times
#   BENCH_OUT [a new /tmp/kubegate-apibench.XXXXXX]  logs and results.jsonl
#   BENCH_MAX_SECONDS [from the above]  hard bound on the whole script
#   KUBE_BIN_DIR                 directory with kube-apiserver and etcd
#                                (default: what test/conformance/kube/build.sh prints)
#   KUBEGATE_BIN                 kubegate binary (default: built from ./cmd/kubegate)
#   KUBEGATE_BASE_BIN            the binary kubegate-up-base runs
#   BENCH_REF [kube, or kubegate-up-base when kube is not run]  the system the ratios divide by
#
# Exits non-zero if a system fails to start, a request fails or a watcher
# misses an event.
set -euo pipefail

ROUNDS=${BENCH_ROUNDS:-3}
SYSTEMS=${BENCH_SYSTEMS:-"kube kubegate-up kubegate-etcd"}
KIND=${BENCH_KIND:-pods}
case $KIND in
pods) DEFAULT_CLIENTS=16,64 DEFAULT_WATCHERS=100 NOUN=pods ;;
cr) DEFAULT_CLIENTS=16 DEFAULT_WATCHERS=0 NOUN="custom resources" ;;
*) echo "apiserver.sh: BENCH_KIND is pods or cr, got '$KIND'" >&2; exit 2 ;;
esac
PODS=${BENCH_PODS:-10000}
CLIENTS=${BENCH_CLIENTS:-$DEFAULT_CLIENTS}
FILL_CLIENTS=${BENCH_FILL_CLIENTS:-64}
CREATE_SECONDS=${BENCH_CREATE_SECONDS:-10}
CREATE_MAX=${BENCH_CREATE_MAX:-6000}
LISTS=${BENCH_LISTS:-5}
LIST_GZIP=${BENCH_LIST_GZIP:-1}
WATCHERS=${BENCH_WATCHERS:-$DEFAULT_WATCHERS}
WATCH_EVENTS=${BENCH_WATCH_EVENTS:-100}
WATCH_INTERVAL_MS=${BENCH_WATCH_INTERVAL_MS:-20}
SHARE_CONN=${BENCH_SHARE_CONN:-0}
BUSY_MAX=${BENCH_BUSY_MAX:-25}
QUIET_WAIT=${BENCH_QUIET_WAIT:-10}
STEAL_MAX=${BENCH_STEAL_MAX:-10}
STEAL_RETRIES=${BENCH_STEAL_RETRIES:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
ROOT=$(cd "$HERE/../.." && pwd)

read -ra SYSTEM_LIST <<<"$SYSTEMS"
REF=kube
[[ " $SYSTEMS " != *" kube "* && " $SYSTEMS " == *" kubegate-up-base "* ]] && REF=kubegate-up-base
REF=${BENCH_REF:-$REF}
for n in "$ROUNDS" "$PODS" "$FILL_CLIENTS" "$CREATE_SECONDS" "$CREATE_MAX" "$LISTS" "$WATCHERS" "$WATCH_EVENTS" "$WATCH_INTERVAL_MS" \
	"$BUSY_MAX" "$QUIET_WAIT" "$STEAL_MAX" "$STEAL_RETRIES"; do
	[[ $n =~ ^[0-9]+$ ]] || { echo "apiserver.sh: BENCH_* numbers must be whole numbers, got '$n'" >&2; exit 2; }
done
[[ $CLIENTS =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "apiserver.sh: BENCH_CLIENTS: want numbers separated by commas, got '$CLIENTS'" >&2; exit 2; }
[[ $LIST_GZIP == [01] && $SHARE_CONN == [01] ]] || { echo "apiserver.sh: BENCH_LIST_GZIP and BENCH_SHARE_CONN are 0 or 1" >&2; exit 2; }
[[ $KIND == pods || $WATCHERS == 0 ]] || { echo "apiserver.sh: BENCH_KIND=cr has no watch phase: BENCH_WATCHERS must be 0" >&2; exit 2; }
for sys in "${SYSTEM_LIST[@]}"; do
	case $sys in
	kube | kubegate-up | kubegate-etcd) ;;
	kubegate-up-base)
		[[ -x ${KUBEGATE_BASE_BIN:-} ]] || { echo "apiserver.sh: kubegate-up-base needs KUBEGATE_BASE_BIN, the path of a kubegate binary" >&2; exit 2; }
		;;
	*)
		echo "apiserver.sh: unknown system '$sys' in BENCH_SYSTEMS (want kube, kubegate-up, kubegate-etcd, kubegate-up-base)" >&2
		exit 2
		;;
	esac
done
RUNS=$((ROUNDS * ${#SYSTEM_LIST[@]}))
# A run: up to 20 s to start, the wait for quiet, creating BENCH_PODS pods at
# a few hundred a second at worst, the lists, the timed phases, the watch
# phase and some slack.
RUN_SECONDS=$((20 + QUIET_WAIT + PODS / 300 + LISTS * 2 + 2 * CREATE_SECONDS + WATCH_EVENTS * WATCH_INTERVAL_MS / 1000 + 30))
# Custom resources: creates at a hundred a second on a busy machine, and
# JSON LISTs of several seconds, the first included.
[[ $KIND == cr ]] && RUN_SECONDS=$((20 + 2 * QUIET_WAIT + PODS / 100 + (LISTS + 1) * 10 + 2 * CREATE_SECONDS + 30))
MAX_SECONDS=${BENCH_MAX_SECONDS:-$((RUNS * (STEAL_RETRIES + 1) * RUN_SECONDS + 600))}

say() { printf '%s\n' "$*" >&2; }
die() { say "apiserver.sh: $*"; exit 1; }

command -v go >/dev/null || die "missing: go (https://go.dev/dl)"

# --- process bookkeeping --------------------------------------------------
OUT=${BENCH_OUT:-$(mktemp -d /tmp/kubegate-apibench.XXXXXX)}
mkdir -p "$OUT"
PIDS=()     # the servers of the current run
WATCHDOG=""
LOADER=""   # apiload while it runs
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
trap 'say "apiserver.sh: interrupted"; exit 130' INT
trap 'say "apiserver.sh: stopped after the ${MAX_SECONDS}s bound (BENCH_MAX_SECONDS)"; exit 124' TERM
start_watchdog "$MAX_SECONDS"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true




# --- binaries -----------------------------------------------------------------
BIN=$OUT/bin
mkdir -p "$BIN"
say "building apiload${KUBEGATE_BIN:+ }${KUBEGATE_BIN:- and kubegate} into $BIN"
(cd "$ROOT" && go build -o "$BIN/apiload" ./test/bench/apiload) || die "go build ./test/bench/apiload failed"
if [[ -n ${KUBEGATE_BIN:-} ]]; then
	ln -sf "$(readlink -f "$KUBEGATE_BIN")" "$BIN/kubegate"
else
	(cd "$ROOT" && go build -o "$BIN/kubegate" ./cmd/kubegate) || die "go build ./cmd/kubegate failed"
fi
KG=$BIN/kubegate
if [[ " ${SYSTEM_LIST[*]} " == *" kube "* || " ${SYSTEM_LIST[*]} " == *" kubegate-etcd "* ]]; then
	if [[ -z ${KUBE_BIN_DIR:-} ]]; then
		KUBE_BIN_DIR=$("$ROOT/test/conformance/kube/build.sh") || die "test/conformance/kube/build.sh failed"
	fi
	[[ -x $KUBE_BIN_DIR/kube-apiserver && -x $KUBE_BIN_DIR/etcd ]] || die "no kube-apiserver and etcd in KUBE_BIN_DIR=$KUBE_BIN_DIR"
fi

# --- systems --------------------------------------------------------------------


# launch SYS DIR: starts SYS afresh in DIR; sets MEASURED (the server
# processes, comma-separated), KUBECONFIG_FILE and BOOTSTRAP (a kubeconfig
# that must first bind admin.conf's group, or nothing).
launch() {
	local sys=$1 dir=$2 port pki
	port=$(free_port)
	mkdir -p "$dir"
	BOOTSTRAP=""
	case $sys in
	kube)
		pki_init "$dir" "$port" || return 1
		start_etcd "$dir" || return 1
		start_kube_apiserver "$dir" "$port"
		MEASURED=$LAST_PID,$ETCD_PID
		KUBECONFIG_FILE=$dir/admin.conf
		BOOTSTRAP=$dir/super-admin.conf
		;;
	kubegate-up | kubegate-up-base)
		local kg=$KG
		[[ $sys == kubegate-up-base ]] && kg=$KUBEGATE_BASE_BIN
		start "$dir/kubegate.log" "$kg" up --dir "$dir/cluster" --secure-port "$port" --nodes 0
		MEASURED=$LAST_PID
		KUBECONFIG_FILE=$dir/cluster/admin.conf
		wait_port "$port" "$LAST_PID" "$dir/kubegate.log" || return 1
		;;
	kubegate-etcd)
		pki_init "$dir" "$port" || return 1
		start_etcd "$dir" || return 1
		pki=$dir/pki
		start "$dir/kubegate.log" "$KG" apiserver --bind-address 127.0.0.1 --secure-port "$port" \
			--etcd-servers "$ETCD_URL" --etcd-cafile "$pki/etcd/ca.crt" \
			--etcd-certfile "$pki/apiserver-etcd-client.crt" --etcd-keyfile "$pki/apiserver-etcd-client.key" \
			--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
			--client-ca-file "$pki/ca.crt" \
			--service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
			--service-account-issuer https://kubernetes.default.svc.cluster.local \
			--requestheader-client-ca-file "$pki/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
			--service-cluster-ip-range 10.96.0.0/12
		MEASURED=$LAST_PID,$ETCD_PID
		KUBECONFIG_FILE=$dir/admin.conf
		;;
	esac
}

# --- runs -------------------------------------------------------------------
RESULTS=$OUT/results.jsonl
: >"$RESULTS"
FAILED=()
TICK_HZ=$(getconf CLK_TCK)
n=${#SYSTEM_LIST[@]}
say "running $ROUNDS round(s) of ${SYSTEM_LIST[*]}: $PODS $NOUN, create phases of ${CREATE_SECONDS}s or $CREATE_MAX with $CLIENTS clients, $WATCHERS watchers (bound ${MAX_SECONDS}s); results in $RESULTS"
for ((r = 0; r < ROUNDS; r++)); do
	for ((k = 0; k < n; k++)); do
		sys=${SYSTEM_LIST[$(((k + r) % n))]}
		for ((attempt = 0; ; attempt++)); do
			dir=$OUT/round$((r + 1))-$sys
			((attempt == 0)) || dir+=-again$attempt
			if ! launch "$sys" "$dir"; then
				FAILED+=("round $((r + 1)) $sys: did not start (see $dir)")
				stop_servers
				break
			fi
			args=(-kubeconfig "$KUBECONFIG_FILE" -pids "$MEASURED" -clk-tck "$TICK_HZ" -system "$sys" -round $((r + 1)) -attempt "$attempt" -kind "$KIND"
				-pods "$PODS" -fill-clients "$FILL_CLIENTS" -clients "$CLIENTS" -create-for "${CREATE_SECONDS}s" -create-max "$CREATE_MAX" -lists "$LISTS"
				-list-gzip="$([[ $LIST_GZIP == 1 ]] && echo true || echo false)"
				-share-conn="$([[ $SHARE_CONN == 1 ]] && echo true || echo false)"
				-watchers "$WATCHERS" -watch-events "$WATCH_EVENTS" -watch-interval "${WATCH_INTERVAL_MS}ms"
				-busy-max "$BUSY_MAX" -quiet-wait "${QUIET_WAIT}s")
			[[ -n $BOOTSTRAP ]] && args+=(-bootstrap-kubeconfig "$BOOTSTRAP")
			rc=0
			timeout "$RUN_SECONDS" "$BIN/apiload" "${args[@]}" >"$OUT/run.json" 2> >(tee "$dir/apiload.log" | sed 's/^/  /' >&2) &
			LOADER=$!
			wait "$LOADER" || rc=$?
			LOADER=""
			for pid in ${MEASURED//,/ }; do
				kill -0 "$pid" 2>/dev/null || FAILED+=("round $((r + 1)) $sys: server process $pid exited during the run (see $dir)")
			done
			stop_servers
			rm -rf "$dir/etcd" "$dir/cluster/state.db"
			if [[ ! -s $OUT/run.json ]]; then
				FAILED+=("round $((r + 1)) $sys: apiload printed no result (exit $rc; see $dir/apiload.log)")
				break
			fi
			((rc == 0)) || FAILED+=("round $((r + 1)) $sys: failed requests or missed watch events (see $dir/apiload.log)")
			steal=$(sed -n 's/.*"steal_pct":\([0-9.]*\).*/\1/p' "$OUT/run.json")
			if ((attempt < STEAL_RETRIES)) && awk -v s="${steal:-0}" -v m="$STEAL_MAX" 'BEGIN { exit !(s > m) }'; then
				say "  round $((r + 1)) $sys: ${steal}% of the CPU time was stolen during the run; repeating it"
				cat "$OUT/run.json" >>"$OUT/repeated.jsonl"
				continue
			fi
			cat "$OUT/run.json" >>"$RESULTS"
			break
		done
	done
done

# --- report -----------------------------------------------------------------
echo "kubegate API server benchmark: $ROUNDS round(s), $PODS $NOUN, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
if [[ -n ${KUBE_BIN_DIR:-} ]]; then
	echo "$("$KUBE_BIN_DIR/kube-apiserver" --version)  etcd $("$KUBE_BIN_DIR/etcd" --version | sed -n 's/^etcd Version: //p')  $("$KG" version 2>/dev/null | head -n1)  $(go version | cut -d' ' -f3)"
fi
report_rc=0
"$BIN/apiload" -report "$RESULTS" -ref "$REF" -steal-max "$STEAL_MAX" || report_rc=$?
((report_rc < 2)) || FAILED+=("apiload -report failed")
echo "results: $RESULTS"
if ((${#FAILED[@]} > 0)); then
	printf 'FAIL: %s\n' "${FAILED[@]}"
	exit 1
fi
echo "PASS: every system started, no request failed, every watcher saw every event"
