#!/usr/bin/env bash
# gateway.sh compares kubegate's gateway with HAProxy, nginx and a plain Go
# httputil.ReverseProxy doing the same job, side by side in one run with one
# load generator: verify the client certificate against the CA, forward CN
# and O as X-Remote-User and X-Remote-Group lines, strip client-supplied
# X-Remote-* headers, and proxy over keep-alive to a plain-HTTP backend.
# haproxy-kube is HAProxy forwarding also what kubegate adds to that
# (system:authenticated, the credential ID, X-Request-Id, X-Forwarded-For),
# so that the backend sees the same request from both.
#
# Usage: test/bench/gateway.sh        (from anywhere; see test/bench/README.md)
#
# Environment (defaults in brackets):
#   BENCH_ROUNDS [3]          rounds; each runs every scenario on every system
#   BENCH_DURATION [10]       measured seconds per run
#   BENCH_WARMUP [1]          warm-up seconds before each run (errors still count)
#   BENCH_SYSTEMS ["kubegate haproxy haproxy-kube nginx plainproxy"]
#   BENCH_SCENARIOS ["ka64 ka1 hs16 h2-64 ka64-token ka64-sa ka64-oidc"]  also: hs16-x25519, ka64-h2
#                             (ka64-token, ka64-sa and ka64-oidc run on kubegate only)
#   BENCH_HANDSHAKE_CURVES [""]  groups the client offers in hs16 ("" = Go's defaults)
#   BENCH_BUSY_MAX [25]       CPU busy % above which a run waits for quiet
#   BENCH_QUIET_WAIT [10]     seconds to wait for quiet before running anyway
#   BENCH_STEAL_MAX [10]      % of CPU time stolen by the hypervisor during a run
#                             above which the run is repeated ...
#   BENCH_STEAL_RETRIES [2]   ... at most this many times; the last one is kept,
#                             and left out of the figures if it was disturbed
#                             too, unless all of the system's runs were
#   BENCH_OUT [a new /tmp/kubegate-bench.XXXXXX]  configs, logs and results.jsonl
#   BENCH_MAX_SECONDS [from the above]  hard bound on the whole script
#   KUBEGATE_GATEWAY_CMD      command that starts the gateway; it may use
#                             $BENCH_PORT, $BENCH_UPSTREAM and $BENCH_PKI (ca.crt,
#                             server.crt, server.key, tokens.csv, sa.pub, authn.yaml). Unset:
#                             `kubegate gateway` built from ./cmd/kubegate.
#   KUBEGATE_BASE_BIN         a second kubegate binary (built from another
#                             commit, say) run as the system kubegate-base with
#                             the same flags, to compare before and after in one
#                             run: BENCH_SYSTEMS="kubegate kubegate-base ..."
#   (system kubegate-h2fast)  the kubegate command with --http2-fast-path: HTTP/2
#                             served by gateway/internal/h2 instead of Go's
#                             server, in the same run as kubegate:
#                             BENCH_SYSTEMS="kubegate kubegate-h2fast" BENCH_SCENARIOS=h2-64
#   BENCH_REFS [haproxy,haproxy-kube,nginx, and kubegate when kubegate-base or
#                             kubegate-h2fast runs]  systems every other is
#                             compared with (req/s, p99, CPU per request)
#
# Exits non-zero if a system fails the identity checks, any request fails, or
# a spoofed X-Remote-* header reaches the backend.
set -euo pipefail

ROUNDS=${BENCH_ROUNDS:-3}
DURATION=${BENCH_DURATION:-10}
WARMUP=${BENCH_WARMUP:-1}
SYSTEMS=${BENCH_SYSTEMS:-"kubegate haproxy haproxy-kube nginx plainproxy"}
SCENARIOS=${BENCH_SCENARIOS:-"ka64 ka1 hs16 h2-64 ka64-token ka64-sa ka64-oidc"}
HS_CURVES=${BENCH_HANDSHAKE_CURVES:-}
BUSY_MAX=${BENCH_BUSY_MAX:-25}
QUIET_WAIT=${BENCH_QUIET_WAIT:-10}
STEAL_MAX=${BENCH_STEAL_MAX:-10}
STEAL_RETRIES=${BENCH_STEAL_RETRIES:-2}
NGINX_MODULES=${NGINX_MODULES:-/usr/lib/nginx/modules}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
ROOT=$(cd "$HERE/../.." && pwd)
URL_PATH=/api/v1/namespaces/default/pods/bench

read -ra SYSTEM_LIST <<<"$SYSTEMS"
REFS=haproxy,haproxy-kube,nginx
[[ " $SYSTEMS " == *" kubegate-base "* || " $SYSTEMS " == *" kubegate-h2fast "* ]] && REFS+=,kubegate
REFS=${BENCH_REFS:-$REFS}
read -ra SCENARIO_LIST <<<"$SCENARIOS"
for n in "$ROUNDS" "$DURATION" "$WARMUP" "$BUSY_MAX" "$QUIET_WAIT" "$STEAL_MAX" "$STEAL_RETRIES"; do
	[[ $n =~ ^[0-9]+$ ]] || { echo "gateway.sh: BENCH_* numbers must be whole numbers, got '$n'" >&2; exit 2; }
done
RUNS=$((ROUNDS * ${#SCENARIO_LIST[@]} * ${#SYSTEM_LIST[@]}))
MAX_SECONDS=${BENCH_MAX_SECONDS:-$((RUNS * (STEAL_RETRIES / 2 + 1) * (DURATION + WARMUP + QUIET_WAIT / 2 + 4) + 600))}

say() { printf '%s\n' "$*" >&2; }
die() { say "gateway.sh: $*"; exit 1; }

# --- tools --------------------------------------------------------------
missing=()
command -v go >/dev/null || missing+=("go (https://go.dev/dl)")
command -v curl >/dev/null || missing+=("curl")
for sys in "${SYSTEM_LIST[@]}"; do
	case $sys in
	haproxy | haproxy-kube) command -v haproxy >/dev/null || missing+=("haproxy") ;;
	nginx)
		command -v nginx >/dev/null || missing+=("nginx")
		[[ -f $NGINX_MODULES/ngx_http_headers_more_filter_module.so ]] ||
			missing+=("libnginx-mod-http-headers-more-filter (looked in NGINX_MODULES=$NGINX_MODULES)")
		;;
	kubegate | kubegate-h2fast | plainproxy) ;;
	kubegate-base) [[ -x ${KUBEGATE_BASE_BIN:-} ]] || die "kubegate-base needs KUBEGATE_BASE_BIN, the path of a kubegate binary" ;;
	*) die "unknown system '$sys' in BENCH_SYSTEMS (want kubegate, kubegate-base, kubegate-h2fast, haproxy, haproxy-kube, nginx, plainproxy)" ;;
	esac
done
for sc in "${SCENARIO_LIST[@]}"; do
	case $sc in ka64 | ka1 | hs16 | hs16-x25519 | ka64-h2 | h2-64 | ka64-token | ka64-sa | ka64-oidc) ;; *) die "unknown scenario '$sc' in BENCH_SCENARIOS" ;; esac
done
if ((${#missing[@]} > 0)); then
	say "gateway.sh: missing: ${missing[*]}"
	say "  on Debian/Ubuntu: apt-get install -y haproxy nginx libnginx-mod-http-headers-more-filter curl"
	say "  or leave the system out: BENCH_SYSTEMS=\"kubegate plainproxy\" $0"
	exit 1
fi

# --- process bookkeeping --------------------------------------------------
OUT=${BENCH_OUT:-$(mktemp -d /tmp/kubegate-bench.XXXXXX)}
mkdir -p "$OUT"
PIDS=()     # every long-running process this script started
WATCHDOG=""
LOADGEN=""  # the load generator while it runs
cleanup() {
	local rc=$? pid i
	trap - EXIT INT TERM
	set +e
	[[ -n $WATCHDOG ]] && kill -TERM "$WATCHDOG" 2>/dev/null
	[[ -n $LOADGEN ]] && kill -TERM "$LOADGEN" 2>/dev/null
	for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do
		for ((i = 0; i < 30; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
	done
	wait 2>/dev/null
	exit "$rc"
}
trap cleanup EXIT
trap 'say "gateway.sh: interrupted"; exit 130' INT
trap 'say "gateway.sh: stopped after the ${MAX_SECONDS}s bound (BENCH_MAX_SECONDS)"; exit 124' TERM
start_watchdog "$MAX_SECONDS"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# start NAME CMD...: runs CMD in the background, logging to $OUT/NAME.log.
start() {
	local name=$1
	shift
	"$@" >"$OUT/$name.log" 2>&1 &
	PIDS+=($!)
	LAST_PID=$!
}

# wait_port PORT PID NAME: until something accepts on 127.0.0.1:PORT.
wait_port() {
	local i
	for ((i = 0; i < 100; i++)); do
		kill -0 "$2" 2>/dev/null || { tail -n 20 "$OUT/$3.log" >&2; return 1; }
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	say "$3: nothing listening on 127.0.0.1:$1 after 10s"
	return 1
}


# cpu_times: prints the machine's total, stolen and idle CPU ticks so far.
# Time the hypervisor gave to other guests during a run slows every system
# in it; the report shows it per run so that disturbed runs can be told
# apart. Idle time is CPU that no process used: under a load that could
# keep both CPUs busy, it is throughput a system left on the table.
cpu_times() {
	local _ u n s i w q sq st
	read -r _ u n s i w q sq st _ </proc/stat
	echo "$((u + n + s + i + w + q + sq + st)) $st $((i + w))"
}

# pct PART WHOLE: PART as a whole percentage of WHOLE (0 when WHOLE is 0).
pct() { echo $((100 * $1 / ($2 > 0 ? $2 : 1))); }

# cpu_busy: percent of all CPU time that was busy over half a second.
cpu_busy() {
	local t1 i1 t2 i2
	read -r t1 _ i1 <<<"$(cpu_times)"
	sleep 0.5
	read -r t2 _ i2 <<<"$(cpu_times)"
	pct $(((t2 - t1) - (i2 - i1))) $((t2 - t1))
}

# wait_quiet: waits up to QUIET_WAIT seconds for the CPU to be idle and sets
# BUSY to the busy percentage seen last.
NOISY=0
wait_quiet() {
	local waited=0
	BUSY=$(cpu_busy)
	while ((BUSY > BUSY_MAX && waited < QUIET_WAIT)); do
		sleep 0.5
		waited=$((waited + 1))
		BUSY=$(cpu_busy)
	done
	if ((BUSY > BUSY_MAX)); then
		say "  warning: CPU ${BUSY}% busy before this run (something else is running); its figures are noisy"
		NOISY=$((NOISY + 1))
	fi
}

# --- build and PKI --------------------------------------------------------
BIN=$OUT/bin
PKI=$OUT/pki
mkdir -p "$BIN" "$PKI"
say "building test/bench programs into $BIN"
(cd "$ROOT" && for p in loadgen backend plainproxy mkpki oidcissuer; do go build -o "$BIN/$p" "./test/bench/$p" || exit 1; done) ||
	die "go build failed"
"$BIN/mkpki" -dir "$PKI"

# The OpenID issuer of ka64-oidc: it writes authn.yaml, which the gateway
# reads at start-up, and then oidc.token.
start oidcissuer "$BIN/oidcissuer" -dir "$PKI"
for ((i = 0; i < 100; i++)); do
	[[ -s $PKI/oidc.token ]] && break
	kill -0 "$LAST_PID" 2>/dev/null || { tail -n 20 "$OUT/oidcissuer.log" >&2; die "oidcissuer did not start"; }
	sleep 0.1
done
[[ -s $PKI/oidc.token ]] || die "oidcissuer wrote no token in 10s (see $OUT/oidcissuer.log)"

BACKEND_PORT=$(free_port)
start backend "$BIN/backend" -listen "127.0.0.1:$BACKEND_PORT"
wait_port "$BACKEND_PORT" "$LAST_PID" backend || die "backend did not start"
BACKEND_PID=$LAST_PID
BACKEND=127.0.0.1:$BACKEND_PORT

# read_stats: sets SPOOFED and NOUSER from the backend's /stats.
read_stats() {
	local json
	json=$(curl -fsS --max-time 5 "http://$BACKEND/stats") || die "cannot read http://$BACKEND/stats (see $OUT/backend.log)"
	SPOOFED=$(sed -n 's/.*"spoofed":\([0-9]*\).*/\1/p' <<<"$json")
	NOUSER=$(sed -n 's/.*"no_user":\([0-9]*\).*/\1/p' <<<"$json")
	[[ -n $SPOOFED && -n $NOUSER ]] || die "unexpected /stats answer: $json"
}

# --- systems --------------------------------------------------------------
declare -A PORT SYS_PID
ACTIVE=()
FAILED=()

kubegate_cmd() { # prints the gateway command, or nothing with a note
	if [[ -n ${KUBEGATE_GATEWAY_CMD:-} ]]; then
		echo "$KUBEGATE_GATEWAY_CMD"
		return
	fi
	# Built once: kubegate-h2fast runs the same binary.
	if [[ ! -x $BIN/kubegate ]] && ! (cd "$ROOT" && go build -o "$BIN/kubegate" ./cmd/kubegate) >"$OUT/kubegate-build.log" 2>&1; then
		say "note: skipping kubegate: ./cmd/kubegate does not build (see $OUT/kubegate-build.log)"
		return
	fi
	local help
	if ! help=$("$BIN/kubegate" gateway --help 2>&1); then
		say "note: skipping kubegate: this build has no 'kubegate gateway' command; set KUBEGATE_GATEWAY_CMD to benchmark another build"
		return
	fi
	if [[ $help != *--bind-address* ]]; then
		say "note: skipping kubegate: 'kubegate gateway' has no --bind-address to keep it on 127.0.0.1; set KUBEGATE_GATEWAY_CMD"
		return
	fi
	# A build without --authentication-config runs without it; ka64-oidc
	# then fails on it.
	local authn=""
	# shellcheck disable=SC2016 # expanded by the bash -c below
	[[ $help == *--authentication-config* ]] && authn=' --authentication-config "$BENCH_PKI/authn.yaml"'
	# shellcheck disable=SC2016 # expanded by the bash -c below
	echo '"$BENCH_BIN/kubegate" gateway --bind-address 127.0.0.1 --secure-port "$BENCH_PORT" --tls-cert-file "$BENCH_PKI/server.crt" --tls-private-key-file "$BENCH_PKI/server.key" --client-ca-file "$BENCH_PKI/ca.crt" --token-auth-file "$BENCH_PKI/tokens.csv" --service-account-key-file "$BENCH_PKI/sa.pub" --service-account-lookup=false'"$authn"' --upstream "$BENCH_UPSTREAM"'
}

# launch SYS: starts SYS on a fresh port; returns non-zero to skip it.
launch() {
	local sys=$1 port cmd
	port=$(free_port)
	case $sys in
	kubegate | kubegate-h2fast)
		cmd=$(kubegate_cmd)
		[[ -n $cmd ]] || return 1
		# kubegate-h2fast: the same command, HTTP/2 served by the
		# gateway's own HTTP/2 server (gateway/internal/h2).
		if [[ $sys == kubegate-h2fast ]]; then
			if [[ -z ${KUBEGATE_GATEWAY_CMD:-} && $("$BIN/kubegate" gateway --help 2>&1) != *--http2-fast-path* ]]; then
				say "note: skipping kubegate-h2fast: this build has no --http2-fast-path"
				return 1
			fi
			cmd+=" --http2-fast-path"
		fi
		say "$sys: $cmd"
		start "$sys" env BENCH_PORT="$port" BENCH_UPSTREAM="http://$BACKEND" BENCH_PKI="$PKI" BENCH_BIN="$BIN" \
			bash -c "exec $cmd"
		;;
	kubegate-base)
		# The same flags as kubegate, given to the other binary.
		mkdir -p "$OUT/base-bin"
		ln -sf "$(readlink -f "$KUBEGATE_BASE_BIN")" "$OUT/base-bin/kubegate"
		cmd=$(KUBEGATE_GATEWAY_CMD= kubegate_cmd)
		[[ -n $cmd ]] || return 1
		say "kubegate-base: $KUBEGATE_BASE_BIN, the same flags"
		start kubegate-base env BENCH_PORT="$port" BENCH_UPSTREAM="http://$BACKEND" BENCH_PKI="$PKI" BENCH_BIN="$OUT/base-bin" \
			bash -c "exec $cmd"
		;;
	haproxy | haproxy-kube)
		# haproxy-kube: the same configuration, forwarding also what
		# kubegate adds (see peers/haproxy.cfg).
		local env=()
		[[ $sys == haproxy-kube ]] && env=(BENCH_KUBE_IDENTITY=1)
		sed -e "s|@LISTEN@|127.0.0.1:$port|g; s|@BACKEND@|$BACKEND|g; s|@PKI@|$PKI|g" \
			"$HERE/peers/haproxy.cfg" >"$OUT/$sys.cfg"
		env "${env[@]}" haproxy -c -q -f "$OUT/$sys.cfg" || die "haproxy rejected $OUT/$sys.cfg"
		start "$sys" env "${env[@]}" haproxy -db -f "$OUT/$sys.cfg"
		;;
	nginx)
		mkdir -p "$OUT/nginx"
		sed -e "s|@LISTEN@|127.0.0.1:$port|g; s|@BACKEND@|$BACKEND|g; s|@PKI@|$PKI|g; s|@RUNDIR@|$OUT/nginx|g; s|@MODULES@|$NGINX_MODULES|g" \
			"$HERE/peers/nginx.conf" >"$OUT/nginx.conf"
		nginx -t -q -p "$OUT/nginx" -e "$OUT/nginx/error.log" -c "$OUT/nginx.conf" || die "nginx rejected $OUT/nginx.conf"
		start nginx nginx -p "$OUT/nginx" -e "$OUT/nginx/error.log" -c "$OUT/nginx.conf"
		;;
	plainproxy)
		start plainproxy "$BIN/plainproxy" -listen "127.0.0.1:$port" -upstream "http://$BACKEND" \
			-cert "$PKI/server.crt" -key "$PKI/server.key" -cacert "$PKI/ca.crt"
		;;
	esac
	wait_port "$port" "$LAST_PID" "$sys" || return 2
	PORT[$sys]=$port
	SYS_PID[$sys]=$LAST_PID
}

# get SYS CERT: one curl request with spoofed identity headers; sets CODE,
# SEEN_USER and SEEN_GROUP. CERT "" sends no client certificate.
get() {
	local hdr=$OUT/$1-$2.headers
	local args=(-sS --http1.1 -o /dev/null -D "$hdr" -w '%{http_code}' --max-time 5 --cacert "$PKI/ca.crt"
		-H 'X-Remote-User: spoofed' -H 'X-Remote-Group: spoofed' -H 'x-remote-extra-scopes: spoofed')
	[[ -n $2 ]] && args+=(--cert "$PKI/$2.crt" --key "$PKI/$2.key")
	: >"$hdr"
	CODE=$(curl "${args[@]}" "https://127.0.0.1:${PORT[$1]}$URL_PATH" 2>/dev/null) || CODE=000
	SEEN_USER=$(sed -n 's/^[Xx]-[Ss]een-[Uu]ser: *//p' "$hdr" | tr -d '\r')
	SEEN_GROUP=$(sed -n 's/^[Xx]-[Ss]een-[Gg]roup: *//p' "$hdr" | tr -d '\r')
}

# verify SYS: the identity contract, checked with curl before any load.
# The groups must be the cert's O values, one line each, in order; a system
# may append system:authenticated, as kube-apiserver's authenticators do.
# WANT_GROUPS[SYS] is set to what every answer under load must then echo.
declare -A WANT_GROUPS
verify() {
	local sys=$1 c ok=0 g
	WANT_GROUPS[$sys]=""
	for c in client client-rdns; do
		get "$sys" "$c"
		if [[ $CODE != 200 || $SEEN_USER != bench-user ||
			($SEEN_GROUP != "devs|devops" && $SEEN_GROUP != "devs|devops|system:authenticated") ||
			(-n ${WANT_GROUPS[$sys]} && $SEEN_GROUP != "${WANT_GROUPS[$sys]}") ]]; then
			say "$sys: cert $c: got status $CODE, user '$SEEN_USER', groups '$SEEN_GROUP'; want 200, 'bench-user', 'devs|devops' (two lines, optionally then system:authenticated)"
			ok=1
		fi
		WANT_GROUPS[$sys]=$SEEN_GROUP
	done
	get "$sys" client-tricky
	IFS='|' read -ra groups <<<"$SEEN_GROUP"
	for g in "${groups[@]}"; do
		[[ $g == system:masters ]] && { say "$sys: cert client-tricky: escaped ',' or '+' split into group system:masters"; ok=1; }
	done
	[[ $CODE == 200 && -n $SEEN_USER ]] || { say "$sys: cert client-tricky: got status $CODE, user '$SEEN_USER'"; ok=1; }
	say "$sys: escaped subject forwarded as user '$SEEN_USER', groups '$SEEN_GROUP'"
	for c in untrusted ""; do
		get "$sys" "$c"
		[[ $CODE == 200 ]] && { say "$sys: cert '${c:-none}': got status 200, want the request refused"; ok=1; }
	done
	return $ok
}

# wait_oidc SYS: until SYS accepts the OpenID token, which it can once it
# has fetched the issuer's keys in the background after start-up.
wait_oidc() {
	local i code
	for ((i = 0; i < 100; i++)); do
		code=$(curl -sS --http1.1 -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$PKI/ca.crt" \
			-H "Authorization: Bearer $(cat "$PKI/oidc.token")" "https://127.0.0.1:${PORT[$1]}$URL_PATH" 2>/dev/null) || code=000
		[[ $code == 200 ]] && return 0
		sleep 0.1
	done
	say "$1: the OpenID token got status $code after 10s, want 200 (see $OUT/$1.log)"
	return 1
}

read_stats
spoofed_before=$SPOOFED
for sys in "${SYSTEM_LIST[@]}"; do
	launch "$sys" || {
		rc=$?
		((rc == 1)) && continue
		FAILED+=("$sys: did not start (see $OUT/$sys.log)")
		continue
	}
	if [[ " ${SCENARIO_LIST[*]} " == *" ka64-oidc "* && $sys == kubegate* ]] && ! wait_oidc "$sys"; then
		FAILED+=("$sys: the OpenID token was refused")
	elif verify "$sys"; then
		say "$sys: identity checks passed on 127.0.0.1:${PORT[$sys]}; groups forwarded: ${WANT_GROUPS[$sys]}"
		ACTIVE+=("$sys")
	else
		FAILED+=("$sys: identity checks failed")
	fi
done
read_stats
((SPOOFED == spoofed_before)) || FAILED+=("a spoofed X-Remote-* header reached the backend during the checks")
((${#ACTIVE[@]} > 0)) || die "no system to benchmark; ${FAILED[*]:-}"

# --- runs -------------------------------------------------------------------
# scenario_args NAME: the loadgen flags of a scenario.
scenario_args() {
	case $1 in
	ka64 | ka64-token | ka64-sa | ka64-oidc) echo "-mode keepalive -conns 64" ;;
	ka1) echo "-mode keepalive -conns 1" ;;
	hs16) echo "-mode newconn -conns 16${HS_CURVES:+ -curves $HS_CURVES}" ;;
	hs16-x25519) echo "-mode newconn -conns 16 -curves X25519" ;;
	ka64-h2) echo "-mode keepalive -conns 64 -http2" ;;
	h2-64) echo "-mode keepalive -conns 4 -streams 16 -http2" ;;
	esac
}

# credential_args SCENARIO SYS: sets CRED (the loadgen's credential flags)
# and WANT_USER and WANT_GROUP (what the backend must see); returns
# non-zero if SYS does not run SCENARIO. Token scenarios send no client
# certificate, so the token is what authenticates; only kubegate reads
# tokens.
credential_args() {
	case $1 in
	ka64-token | ka64-sa | ka64-oidc)
		[[ $2 == kubegate* ]] || return 1
		local file=token.txt
		WANT_USER=bench-user WANT_GROUP="devs|devops|system:authenticated"
		if [[ $1 == ka64-sa ]]; then
			file=sa.token WANT_USER=system:serviceaccount:bench:loadgen
			WANT_GROUP="system:serviceaccounts|system:serviceaccounts:bench|system:authenticated"
		fi
		[[ $1 == ka64-oidc ]] && file=oidc.token WANT_USER=oidc:bench-user
		CRED=(-bearer "$(cat "$PKI/$file")")
		;;
	*)
		CRED=(-cert "$PKI/client.crt" -key "$PKI/client.key")
		WANT_USER=bench-user WANT_GROUP=${WANT_GROUPS[$2]}
		;;
	esac
}

# cpu_ticks PID: user+system clock ticks used so far by PID and its
# children (nginx's workers).
cpu_ticks() {
	local p t=0 f
	for p in "$1" $(pgrep -P "$1" 2>/dev/null); do
		f=$(cut -d' ' -f14,15 "/proc/$p/stat" 2>/dev/null) || continue
		t=$((t + ${f% *} + ${f#* }))
	done
	echo "$t"
}
TICK_HZ=$(getconf CLK_TCK)

# per_req TICKS N: microseconds of CPU per request.
per_req() { awk -v t="$1" -v hz="$TICK_HZ" -v n="$2" 'BEGIN { if (n > 0) printf "%.1f", t / hz * 1e6 / n; else print 0 }'; }

RESULTS=$OUT/results.jsonl
: >"$RESULTS"
# run_once ROUND SCENARIO SYSTEM: one load generator run into $OUT/run.json,
# with the system's and the backend's CPU per request and the CPU stolen
# and left idle during it as tags; sets cpu_us, steal_pct, idle_pct and
# errs (the run's errors, measured + warm-up).
run_once() {
	local r=$1 sc=$2 sys=$3 ticks0 bticks0 total0 steal0 idle0 ticks bticks total steal idle reqs backend_us
	ticks0=$(cpu_ticks "${SYS_PID[$sys]}") bticks0=$(cpu_ticks "$BACKEND_PID")
	read -r total0 steal0 idle0 <<<"$(cpu_times)"
	# shellcheck disable=SC2046 # scenario_args is a list of flags
	timeout $((DURATION + WARMUP + 30)) "$BIN/loadgen" \
		-url "https://127.0.0.1:${PORT[$sys]}$URL_PATH" $(scenario_args "$sc") \
		-duration "${DURATION}s" -warmup "${WARMUP}s" \
		"${CRED[@]}" -cacert "$PKI/ca.crt" \
		-header X-Remote-User=spoofed -header X-Remote-Group=spoofed -header X-Remote-Extra-Scopes=spoofed \
		-check-header "X-Seen-User=$WANT_USER" -check-header "X-Seen-Group=$WANT_GROUP" \
		-label "$sys" -scenario "$sc" -tag "busy_pct=$BUSY" -tag "round=$((r + 1))" \
		>"$OUT/run.json" 2>"$OUT/run.err" &
	LOADGEN=$!
	wait "$LOADGEN" || true
	LOADGEN=""
	# The system's CPU per request, warm-up included on both sides.
	# The backend's too: with the load generator's own (which it
	# reports), the whole machine's CPU per request.
	ticks=$(($(cpu_ticks "${SYS_PID[$sys]}") - ticks0)) bticks=$(($(cpu_ticks "$BACKEND_PID") - bticks0))
	read -r total steal idle <<<"$(cpu_times)"
	steal_pct=$(pct $((steal - steal0)) $((total - total0)))
	idle_pct=$(pct $((idle - idle0)) $((total - total0)))
	reqs=$(sed -n 's/.*"requests":\([0-9]*\),.*"warmup_requests":\([0-9]*\).*/\1+\2/p' "$OUT/run.json")
	cpu_us=$(per_req "$ticks" "$((${reqs:-0}))") backend_us=$(per_req "$bticks" "$((${reqs:-0}))")
	sed -i "s/\"tags\":{/\"tags\":{\"cpu_us_per_req\":\"$cpu_us\",\"backend_cpu_us_per_req\":\"$backend_us\",\"steal_pct\":\"$steal_pct\",\"idle_pct\":\"$idle_pct\",/" "$OUT/run.json"
	errs=$(sed -n 's/.*"errors":\([0-9]*\),.*"warmup_errors":\([0-9]*\).*/\1+\2/p' "$OUT/run.json")
}

n=${#ACTIVE[@]}
say "running $ROUNDS round(s) of ${SCENARIO_LIST[*]} on ${ACTIVE[*]}, ${DURATION}s each after ${WARMUP}s warm-up (bound ${MAX_SECONDS}s); results in $RESULTS"
for ((r = 0; r < ROUNDS; r++)); do
	for sc in "${SCENARIO_LIST[@]}"; do
		for ((k = 0; k < n; k++)); do
			sys=${ACTIVE[$(((k + r) % n))]}
			credential_args "$sc" "$sys" || continue
			read_stats
			spoofed0=$SPOOFED nouser0=$NOUSER
			for ((attempt = 0; ; attempt++)); do
				wait_quiet
				run_once "$r" "$sc" "$sys"
				((steal_pct > STEAL_MAX && attempt < STEAL_RETRIES)) || break
				say "  round $((r + 1))  $sc $sys: ${steal_pct}% of the CPU time was stolen during the run; repeating it"
				cat "$OUT/run.json" >>"$OUT/repeated.jsonl"
				((${errs:-1} == 0)) || FAILED+=("round $((r + 1)) $sc $sys: a repeated run had errors (see $OUT/repeated.jsonl)")
			done
			cat "$OUT/run.json" >>"$RESULTS"
			sed 's/^/  /' "$OUT/run.err" >&2
			[[ -s $OUT/run.json ]] || FAILED+=("round $((r + 1)) $sc $sys: loadgen printed no result")
			line=$(sed -n 's/.*"rps":\([0-9.]*\).*"p50_us":\([0-9.]*\).*"p99_us":\([0-9.]*\).*/\1 \2 \3/p' "$OUT/run.json")
			read -r rps p50 p99 <<<"${line:-0 0 0}"
			printf '  round %d  %-11s %-11s %9.0f req/s  p50 %6.0fµs  p99 %7.0fµs  cpu %6sµs/req  errors %s  busy %s%%  steal %s%%  idle %s%%\n' \
				$((r + 1)) "$sc" "$sys" "$rps" "$p50" "$p99" "$cpu_us" "${errs:-?}" "$BUSY" "$steal_pct" "$idle_pct" >&2
			read_stats
			d=$((SPOOFED - spoofed0))
			((d == 0)) || FAILED+=("round $((r + 1)) $sc $sys: $d requests reached the backend with a spoofed X-Remote-* header")
			d=$((NOUSER - nouser0))
			((d == 0)) || FAILED+=("round $((r + 1)) $sc $sys: $d requests reached the backend without X-Remote-User")
		done
	done
done

# --- report -----------------------------------------------------------------
echo "kubegate gateway benchmark: $ROUNDS round(s) x ${DURATION}s, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "haproxy: $(haproxy -v 2>/dev/null | head -n1 | cut -d' ' -f3 || true)  nginx: $(nginx -v 2>&1 | cut -d/ -f2 || true)  $(go version | cut -d' ' -f3)"
report_rc=0
"$BIN/loadgen" -report "$RESULTS" -ref "$REFS" -steal-max "$STEAL_MAX" || report_rc=$?
((report_rc == 0)) || FAILED+=("requests failed (errors column above)")
read_stats
echo "spoofed X-Remote-* headers that reached the backend: $((SPOOFED - spoofed_before))"
((NOISY == 0)) || echo "warning: $NOISY run(s) started with the CPU over ${BUSY_MAX}% busy; rerun on a quiet machine for figures to quote"
echo "results: $RESULTS"
if ((${#FAILED[@]} > 0)); then
	printf 'FAIL: %s\n' "${FAILED[@]}"
	exit 1
fi
echo "PASS: no errors, no spoofed header reached the backend"
