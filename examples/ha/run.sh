#!/usr/bin/env bash
# A highly available kubegate on one machine, laid out as it would be on
# three: a 3-member etcd cluster over mutual TLS, two API servers on it,
# advertised on two addresses of their own, two gateways each forwarding to
# both API servers, two controller managers and two schedulers of which one
# of each leads, and simulated nodes. See README.md beside this script.
#
#   examples/ha/run.sh DIR                 start it all in DIR, wait until it is ready
#   examples/ha/run.sh stop DIR            stop it all and remove the addresses it added
#   examples/ha/run.sh restart DIR NAME    start NAME again (after a crash, say)
#   examples/ha/run.sh status DIR          each component, its pid, running or not
#
# Environment: KUBEGATE (binary; default built from this tree), ETCD (etcd
# binary; default built once per machine from the version
# test/conformance/kube pins), HA_ADDRESSES (the two API server addresses,
# default "198.18.0.11 198.18.0.12", added to lo when absent, which needs
# root), HA_NODES (simulated nodes, default 3; 0 for none), HA_READY_SECONDS
# (default 180).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ADDRESSES=(${HA_ADDRESSES:-198.18.0.11 198.18.0.12})
NODES=${HA_NODES:-3}
READY_SECONDS=${HA_READY_SECONDS:-180}

usage() {
	sed -n '8,11p' "${BASH_SOURCE[0]}" | sed 's/^#//' >&2
	exit 2
}

say() { printf '%s\n' "$*" >&2; }
die() {
	say "examples/ha: $*"
	exit 1
}

# --- processes ------------------------------------------------------------

# launch NAME CMD ARGS...: start CMD in a session of its own (so that it
# outlives this script and a Ctrl-C in its terminal), its output appended
# to logs/NAME.log, its pid in run/NAME.pid and its command line in
# run/NAME.cmd, which restart runs again.
launch() {
	local name=$1
	shift
	printf '%q ' "$@" >"$D/run/$name.cmd"
	setsid "$@" >>"$D/logs/$name.log" 2>&1 </dev/null &
	echo "$!" >"$D/run/$name.pid"
}

# pid_of NAME: the pid of NAME if it runs, else nothing (and status 1). A
# pid reused by another program does not count: its command line must be
# the one launched.
pid_of() {
	local f="$D/run/$1.pid" pid
	[[ -f $f ]] || return 1
	pid=$(<"$f")
	[[ -r /proc/$pid/cmdline ]] || return 1
	local exe
	exe=$(tr '\0' '\n' <"/proc/$pid/cmdline" | head -1)
	[[ $(head -c 4096 "$D/run/$1.cmd") == "$(printf '%q' "$exe") "* ]] || return 1
	[[ $(awk '{print $3}' "/proc/$pid/stat") != Z ]] || return 1
	echo "$pid"
}

names() {
	local f
	for f in "$D"/run/*.cmd; do
		[[ -e $f ]] || continue
		f=${f##*/}
		echo "${f%.cmd}"
	done
}

stop_all() {
	local name pid pids=()
	for name in $(names); do
		if pid=$(pid_of "$name"); then
			kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
		fi
	done
	for pid in "${pids[@]}"; do
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	done
	rm -f "$D"/run/*.pid
	if [[ -f $D/run/addresses-added ]]; then
		local a
		while read -r a; do
			[[ -n $a ]] && ip addr del "$a/32" dev lo 2>/dev/null || true
		done <"$D/run/addresses-added"
		rm -f "$D/run/addresses-added"
	fi
}

# --- readiness ------------------------------------------------------------

# kc ARGS...: kubectl as the cluster admin, through gateway 1 unless
# --server says otherwise.
kc() { kubectl --kubeconfig "$D/admin.conf" --request-timeout 5s "$@"; }

# ready NAME: whether NAME answers as it should.
ready() {
	local name=$1 n
	pid_of "$name" >/dev/null || return 1
	case $name in
	etcd-*)
		n=${name#etcd-}
		curl -sf --max-time 3 --cacert "$PKI/etcd/ca.crt" --cert "$PKI/etcd/healthcheck-client.crt" \
			--key "$PKI/etcd/healthcheck-client.key" "https://127.0.0.1:${ETCD_CLIENT[n - 1]}/health" | grep -q '"health":"true"'
		;;
	apiserver-*)
		n=${name#apiserver-}
		[[ $(kc --server "https://${ADDRESSES[n - 1]}:$API_PORT" get --raw /readyz 2>/dev/null) == ok ]]
		;;
	gateway-*)
		n=${name#gateway-}
		[[ $(kc --server "https://${ADDRESSES[n - 1]}:$GATEWAY_PORT" get --raw /readyz 2>/dev/null) == ok ]]
		;;
	*) return 0 ;; # controllers, schedulers and nodes: running is all they show from outside
	esac
}

# wait_ready SECONDS NAME...: wait until every NAME is ready; fail at once
# if one stopped, with the end of its log.
wait_ready() {
	local secs=$1 name
	shift
	local deadline=$((SECONDS + secs))
	for name in "$@"; do
		until ready "$name"; do
			if ! pid_of "$name" >/dev/null; then
				say "$name stopped; the end of $D/logs/$name.log:"
				tail -20 "$D/logs/$name.log" >&2
				return 1
			fi
			if ((SECONDS >= deadline)); then
				say "$name was not ready after ${secs}s; the end of $D/logs/$name.log:"
				tail -20 "$D/logs/$name.log" >&2
				return 1
			fi
			sleep 0.5
		done
	done
}

# wait_for SECONDS WHAT CMD ARGS...: run CMD until it succeeds.
wait_for() {
	local secs=$1 what=$2
	shift 2
	local deadline=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || {
			say "waited ${secs}s for $what"
			return 1
		}
		sleep 0.5
	done
}

# --- building -------------------------------------------------------------

kubegate_bin() {
	if [[ -n ${KUBEGATE:-} ]]; then
		command -v "$KUBEGATE" || die "KUBEGATE=$KUBEGATE is not a program"
		return
	fi
	say "building kubegate"
	(cd "$ROOT" && go build -o "$D/bin/kubegate" ./cmd/kubegate)
	echo "$D/bin/kubegate"
}

# etcd_bin: $ETCD, or etcd built from the version test/conformance/kube
# pins, once per machine: under the Go build cache, keyed as
# test/conformance/kube/build.sh keys its binaries (and taken from there
# when that script has run).
etcd_bin() {
	if [[ -n ${ETCD:-} ]]; then
		command -v "$ETCD" || die "ETCD=$ETCD is not a program"
		return
	fi
	local mod=$ROOT/test/conformance/kube cache kube key out
	cache=$(go env GOCACHE)
	kube=$(cd "$mod" && GOWORK=off GOFLAGS= go list -m -f '{{.Version}}' k8s.io/kubernetes)
	key=$(cat "$mod/go.mod" "$mod/go.sum" <(go env GOVERSION) | sha256sum | cut -c1-16)
	if [[ -x $cache/kubegate-conformance/kube-$kube-$key/etcd ]]; then
		echo "$cache/kubegate-conformance/kube-$kube-$key/etcd"
		return
	fi
	out=$cache/kubegate-ha/etcd-$key
	if [[ ! -x $out/etcd ]]; then
		say "building etcd (once per machine)"
		mkdir -p "$out"
		(cd "$mod" && GOWORK=off GOFLAGS= go build -trimpath -o "$out/etcd.tmp" go.etcd.io/etcd/server/v3)
		mv "$out/etcd.tmp" "$out/etcd"
	fi
	echo "$out/etcd"
}

# --- ports and addresses --------------------------------------------------

in_use() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# pick_port ADDRESS...: set PORT to a TCP port nothing listens on at any
# ADDRESS, below the ephemeral range, and not picked before.
USED_PORTS=" "
pick_port() {
	local a busy
	for _ in $(seq 200); do
		PORT=$((20000 + RANDOM % 12000))
		busy=
		[[ $USED_PORTS == *" $PORT "* ]] && continue
		for a in "$@"; do
			if in_use "$a" "$PORT"; then
				busy=1
				break
			fi
		done
		if [[ -z $busy ]]; then
			USED_PORTS+="$PORT "
			return
		fi
	done
	die "no free port found"
}

add_addresses() {
	local a
	: >"$D/run/addresses-added"
	for a in "${ADDRESSES[@]}"; do
		[[ $a =~ ^127\. ]] && die "HA_ADDRESSES: $a is a loopback address; the API servers' endpoints need addresses clients can reach"
		if ip -o addr show | grep -q " inet $a/"; then
			continue
		fi
		if ((EUID != 0)); then
			die "adding $a to lo needs root: run as root, or set HA_ADDRESSES to two addresses this machine already has"
		fi
		ip addr add "$a/32" dev lo
		echo "$a" >>"$D/run/addresses-added"
	done
}

# --- start ----------------------------------------------------------------

# supports SUBCOMMAND FLAG: whether this kubegate's SUBCOMMAND has FLAG.
supports() { "$KG" "$1" --help 2>&1 | grep -Eq -- "$2"; }

start_all() {
	command -v kubectl >/dev/null || die "kubectl is needed (to wait on the cluster)"
	command -v curl >/dev/null || die "curl is needed (to wait on etcd)"
	((${#ADDRESSES[@]} == 2)) || die "HA_ADDRESSES must name two addresses, got ${#ADDRESSES[@]}"
	[[ $NODES =~ ^[0-9]+$ ]] || die "HA_NODES must be a number, got '$NODES'"
	if [[ -d $D/run ]] && [[ -n $(names) ]]; then
		for name in $(names); do
			pid_of "$name" >/dev/null && die "$D already runs $name: examples/ha/run.sh stop $D first"
		done
	fi
	mkdir -p "$D"/{bin,run,logs,data}
	D=$(cd "$D" && pwd)
	PKI=$D/pki
	trap 'code=$?; if ((code != 0)); then say "examples/ha: start failed; stopping what started (logs in $D/logs)"; stop_all; fi' EXIT
	trap 'exit 130' INT TERM

	KG=$(kubegate_bin)
	ETCD_BIN=$(etcd_bin)
	add_addresses

	ETCD_CLIENT=() ETCD_PEER=()
	local i
	for i in 1 2 3; do
		pick_port 127.0.0.1
		ETCD_CLIENT+=("$PORT")
		pick_port 127.0.0.1
		ETCD_PEER+=("$PORT")
	done
	pick_port "${ADDRESSES[@]}"
	API_PORT=$PORT
	pick_port "${ADDRESSES[@]}"
	GATEWAY_PORT=$PORT
	local gw1="https://${ADDRESSES[0]}:$GATEWAY_PORT" gw2="https://${ADDRESSES[1]}:$GATEWAY_PORT"
	local api1="https://${ADDRESSES[0]}:$API_PORT" api2="https://${ADDRESSES[1]}:$API_PORT"

	say "writing the PKI: both addresses in the API server certificate, kubeconfigs through gateway 1"
	"$KG" pki init --dir "$D" --server "$gw1" \
		--apiserver-san "${ADDRESSES[0]}" --apiserver-san "${ADDRESSES[1]}" >"$D/logs/pki.log" 2>&1 ||
		{ cat "$D/logs/pki.log" >&2; return 1; }
	# The second of each pair reaches the cluster through gateway 2.
	for f in admin controller-manager scheduler; do
		sed "s#server: .*#server: $gw2#" "$D/$f.conf" >"$D/$f-gateway-2.conf"
	done

	say "starting etcd (3 members, client and peer mutual TLS)"
	local cluster="" endpoints=""
	for i in 1 2 3; do
		cluster+="${cluster:+,}etcd-$i=https://127.0.0.1:${ETCD_PEER[i - 1]}"
		endpoints+="${endpoints:+,}https://127.0.0.1:${ETCD_CLIENT[i - 1]}"
	done
	for i in 1 2 3; do
		launch "etcd-$i" "$ETCD_BIN" --name "etcd-$i" --data-dir "$D/data/etcd-$i" \
			--listen-client-urls "https://127.0.0.1:${ETCD_CLIENT[i - 1]}" \
			--advertise-client-urls "https://127.0.0.1:${ETCD_CLIENT[i - 1]}" \
			--listen-peer-urls "https://127.0.0.1:${ETCD_PEER[i - 1]}" \
			--initial-advertise-peer-urls "https://127.0.0.1:${ETCD_PEER[i - 1]}" \
			--initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token kubegate-ha \
			--client-cert-auth --trusted-ca-file "$PKI/etcd/ca.crt" \
			--cert-file "$PKI/etcd/server.crt" --key-file "$PKI/etcd/server.key" \
			--peer-client-cert-auth --peer-trusted-ca-file "$PKI/etcd/ca.crt" \
			--peer-cert-file "$PKI/etcd/peer.crt" --peer-key-file "$PKI/etcd/peer.key" \
			--snapshot-count 10000
	done
	wait_ready 60 etcd-1 etcd-2 etcd-3

	# One after the other, as kubeadm joins a second control-plane node to
	# a running first.
	say "starting two API servers on $api1 and $api2"
	local advertise=() upstream_flags=()
	supports apiserver --advertise-address && advertise=(1) ||
		say "this kubegate apiserver has no --advertise-address: the kubernetes Service lists no API server"
	for i in 1 2; do
		local extra=()
		[[ ${#advertise[@]} -gt 0 ]] && extra=(--advertise-address "${ADDRESSES[i - 1]}" --endpoint-reconciler-type lease)
		launch "apiserver-$i" "$KG" apiserver --bind-address "${ADDRESSES[i - 1]}" --secure-port "$API_PORT" \
			"${extra[@]}" \
			--etcd-servers "$endpoints" --etcd-cafile "$PKI/etcd/ca.crt" \
			--etcd-certfile "$PKI/apiserver-etcd-client.crt" --etcd-keyfile "$PKI/apiserver-etcd-client.key" \
			--tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
			--client-ca-file "$PKI/ca.crt" \
			--service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
			--requestheader-client-ca-file "$PKI/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
			--requestheader-username-headers X-Remote-User --requestheader-uid-headers X-Remote-Uid \
			--requestheader-group-headers X-Remote-Group --requestheader-extra-headers-prefix X-Remote-Extra- \
			--proxy-client-cert-file "$PKI/front-proxy-client.crt" --proxy-client-key-file "$PKI/front-proxy-client.key"
		wait_ready 60 "apiserver-$i"
	done

	local both=1
	supports gateway '--upstream (strings|stringArray)' || {
		both=
		say "this kubegate gateway takes one --upstream: gateway N forwards to API server N only"
	}
	say "starting two gateways on $gw1 and $gw2${both:+, each forwarding to both API servers}"
	for i in 1 2; do
		if [[ -n $both ]]; then
			upstream_flags=(--upstream "$api1" --upstream "$api2")
		else
			upstream_flags=(--upstream "https://${ADDRESSES[i - 1]}:$API_PORT")
		fi
		launch "gateway-$i" "$KG" gateway --bind-address "${ADDRESSES[i - 1]}" --secure-port "$GATEWAY_PORT" \
			--tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
			--client-ca-file "$PKI/ca.crt" --service-account-key-file "$PKI/sa.pub" \
			"${upstream_flags[@]}" --upstream-ca-file "$PKI/ca.crt" \
			--proxy-client-cert-file "$PKI/front-proxy-client.crt" --proxy-client-key-file "$PKI/front-proxy-client.key"
	done
	wait_ready 60 gateway-1 gateway-2

	local elect=()
	if supports controllers --leader-elect && supports scheduler --leader-elect; then
		elect=(--leader-elect)
	else
		say "this kubegate has no --leader-elect: both controller managers and both schedulers act at once"
	fi
	say "starting two controller managers and two schedulers${elect:+ (leader-elected)}, one of each per gateway"
	launch controllers-1 "$KG" controllers --kubeconfig "$D/controller-manager.conf" "${elect[@]}" --use-service-account-credentials \
		--root-ca-file "$PKI/ca.crt" --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key"
	launch controllers-2 "$KG" controllers --kubeconfig "$D/controller-manager-gateway-2.conf" "${elect[@]}" --use-service-account-credentials \
		--root-ca-file "$PKI/ca.crt" --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key"
	launch scheduler-1 "$KG" scheduler --kubeconfig "$D/scheduler.conf" "${elect[@]}"
	launch scheduler-2 "$KG" scheduler --kubeconfig "$D/scheduler-gateway-2.conf" "${elect[@]}"

	if ((NODES > 0)); then
		say "starting $NODES simulated nodes (through gateway 2)"
		launch nodes "$KG" nodes simulate --kubeconfig "$D/admin-gateway-2.conf" --count "$NODES"
	fi

	write_env
	say "waiting for the nodes to be Ready and the default service account to exist"
	wait_for "$READY_SECONDS" "$NODES Ready nodes" nodes_ready
	wait_for "$READY_SECONDS" "the default service account (made by the controllers)" \
		kc get serviceaccount default -n default
	if [[ ${#elect[@]} -gt 0 ]]; then
		wait_for "$READY_SECONDS" "a leading controller manager" holder kube-controller-manager
		wait_for "$READY_SECONDS" "a leading scheduler" holder kube-scheduler
	fi
	for name in $(names); do
		pid_of "$name" >/dev/null || die "$name stopped while the rest started; see $D/logs/$name.log"
	done
	trap - EXIT
	report
}

nodes_ready() {
	local n
	n=$(kc get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c '^True$')
	((n == NODES))
}

holder() {
	[[ -n $(kc get lease -n kube-system "$1" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) ]]
}

# write_env: what a program needs to reach the topology, as NAME=VALUE
# lines in DIR/topology.env (the e2e test reads it; a shell can source it).
write_env() {
	{
		echo "ADDRESSES='${ADDRESSES[*]}'"
		echo "API_PORT=$API_PORT"
		echo "GATEWAY_PORT=$GATEWAY_PORT"
		echo "APISERVERS=https://${ADDRESSES[0]}:$API_PORT,https://${ADDRESSES[1]}:$API_PORT"
		echo "GATEWAYS=https://${ADDRESSES[0]}:$GATEWAY_PORT,https://${ADDRESSES[1]}:$GATEWAY_PORT"
		echo "ETCD_ENDPOINTS=https://127.0.0.1:${ETCD_CLIENT[0]},https://127.0.0.1:${ETCD_CLIENT[1]},https://127.0.0.1:${ETCD_CLIENT[2]}"
		echo "ETCD_CLIENT_PORTS='${ETCD_CLIENT[*]}'"
		echo "NODES=$NODES"
	} >"$D/topology.env"
}

report() {
	local name
	# shellcheck disable=SC1091
	. "$D/topology.env"
	cat <<EOF

kubegate is up in $D
  gateways:     ${GATEWAYS//,/ }   (the API, for clients)
  API servers:  ${APISERVERS//,/ }
  etcd:         ${ETCD_ENDPOINTS//,/ }

  export KUBECONFIG=$D/admin.conf            # through gateway 1
  export KUBECONFIG=$D/admin-gateway-2.conf  # through gateway 2

EOF
	status
	cat <<EOF

logs in $D/logs; stop it all with: examples/ha/run.sh stop $D
EOF
}

status() {
	local name pid
	printf '  %-14s %s\n' component pid
	for name in $(names); do
		if pid=$(pid_of "$name"); then
			printf '  %-14s %s\n' "$name" "$pid"
		else
			printf '  %-14s %s\n' "$name" "not running"
		fi
	done
}

# restart NAME: start NAME again with the command line it first ran with,
# and wait until it is ready.
restart() {
	local name=$1
	[[ -f $D/run/$name.cmd ]] || die "no component $name in $D (one of: $(names | tr '\n' ' '))"
	local pid
	if pid=$(pid_of "$name"); then
		die "$name still runs (pid $pid)"
	fi
	# shellcheck disable=SC1091
	. "$D/topology.env"
	ADDRESSES=($ADDRESSES)
	ETCD_CLIENT=($ETCD_CLIENT_PORTS)
	PKI=$D/pki
	local cmd
	cmd=$(<"$D/run/$name.cmd")
	eval "launch $name $cmd"
	wait_ready 60 "$name"
	echo "$name restarted, pid $(pid_of "$name")"
}

case ${1:-} in
stop)
	(($# == 2)) || usage
	D=$(cd "$2" && pwd)
	stop_all
	;;
restart)
	(($# == 3)) || usage
	D=$(cd "$2" && pwd)
	restart "$3"
	;;
status)
	(($# == 2)) || usage
	D=$(cd "$2" && pwd)
	status
	;;
"" | -h | --help) usage ;;
-*) usage ;;
*)
	(($# == 1)) || usage
	D=$1
	start_all
	;;
esac
