# Shared by every examples/*/run.sh: builds (or finds) kubegate, works in a
# temporary directory, prints each command before its output, and stops
# every process it started when the script ends, fails or runs too long.
#
# Use:  . "$(dirname "$0")/../lib.sh"; example_init 60

set -euo pipefail

EXAMPLES=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$EXAMPLES")
PIDS=()
LAST_PID=
WATCHDOG=

# example_init LIMIT: make the work directory and the kubegate binary, and
# stop the script after LIMIT seconds (bash runs the stop once the command
# in the foreground returns, so each command carries its own timeout too).
example_init() {
	local limit=$1
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/kubegate-example.XXXXXX")
	trap example_cleanup EXIT
	trap 'echo "interrupted" >&2; exit 130' INT
	trap 'echo "stopped: the example ran for more than '"$limit"'s" >&2; exit 124' TERM
	(
		sleep "$limit" &
		s=$!
		trap 'kill $s 2>/dev/null; exit 0' TERM
		wait "$s"
		kill -TERM $$ 2>/dev/null
	) </dev/null >/dev/null 2>&1 &
	WATCHDOG=$!
	mkdir -p "$WORK/bin"
	if [ -n "${KUBEGATE:-}" ]; then
		ln -s "$(command -v "$KUBEGATE")" "$WORK/bin/kubegate"
	else
		echo "# building kubegate"
		(cd "$ROOT" && go build -o "$WORK/bin/kubegate" ./cmd/kubegate)
	fi
	export PATH="$WORK/bin:$PATH"
	export KUBECACHEDIR="$WORK/.kube-cache"
	cd "$WORK"
}

example_cleanup() {
	local code=$?
	local p
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		for _ in $(seq 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null || true
	done
	if [ -n "$WATCHDOG" ]; then
		kill -TERM "$WATCHDOG" 2>/dev/null || true
	fi
	cd /
	rm -rf "$WORK"
	exit "$code"
}

# step TITLE: a heading for the next commands.
step() {
	printf '\n== %s ==\n' "$*"
}

# quoted ARGS...: the arguments as one shell command line, quoting only
# those that need it.
quoted() {
	local a q out=
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_@%+=:,./{}-]+$ ]]; then
			out+=" $a"
		else
			q=${a//\'/\'\\\'\'}
			out+=" '$q'"
		fi
	done
	printf '%s' "${out# }"
}

# run CMD ARGS...: print the command, then run it.
run() {
	printf '$ %s\n' "$(quoted "$@")"
	"$@"
}

# run_expect_fail CMD ARGS...: like run, for a command that must fail; it
# prints the exit code and fails the script if the command succeeds.
run_expect_fail() {
	printf '$ %s\n' "$(quoted "$@")"
	local code=0
	"$@" || code=$?
	if [ "$code" -eq 0 ]; then
		echo "expected $1 to fail, but it succeeded" >&2
		return 1
	fi
	echo "(exit code $code, as expected)"
}

# background LOG CMD ARGS...: start CMD with its output in LOG; it is
# stopped when the script ends.
background() {
	local log=$1
	shift
	printf '$ %s > %s 2>&1 &\n' "$(quoted "$@")" "$log"
	"$@" >"$log" 2>&1 </dev/null &
	PIDS+=("$!")
	LAST_PID=$!
}

# free_port: a TCP port on 127.0.0.1 that nothing listens on.
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 12000)) # below the ephemeral range, 32768 and up
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "no free port found" >&2
	return 1
}

# wait_for_log LOG TEXT SECONDS: wait until LOG contains TEXT, then print
# LOG; fail at once if a background process has stopped.
wait_for_log() {
	local log=$1 text=$2 secs=$3
	for _ in $(seq $((secs * 10))); do
		if ! all_running; then
			echo "a process stopped while waiting for \"$text\" in $log:" >&2
			cat "$log" >&2
			return 1
		fi
		if grep -qF -- "$text" "$log" 2>/dev/null; then
			cat "$log"
			return
		fi
		sleep 0.1
	done
	echo "waited ${secs}s for \"$text\" in $log:" >&2
	cat "$log" >&2
	return 1
}

# wait_until SECONDS CMD ARGS...: run CMD quietly until it succeeds; fail
# at once if a background process has stopped.
wait_until() {
	local secs=$1
	shift
	for _ in $(seq $((secs * 10))); do
		if ! all_running; then
			echo "a process stopped while waiting for: $*" >&2
			return 1
		fi
		if "$@" >/dev/null 2>&1; then
			return
		fi
		sleep 0.1
	done
	echo "waited ${secs}s for: $*" >&2
	return 1
}

# run_sh LINE: print a shell line (a pipeline, say), then run it.
run_sh() {
	printf '$ %s\n' "$1"
	eval "$1"
}

# all_running: whether every process started with background still runs.
all_running() {
	local p
	for p in "${PIDS[@]}"; do
		kill -0 "$p" 2>/dev/null || return 1
	done
}

# stop PID: stop a process started with background and wait for it to exit.
stop() {
	local pid=$1 p rest=()
	printf '$ kill %s\n' "$pid"
	kill -TERM "$pid"
	wait "$pid" || true
	for p in "${PIDS[@]}"; do
		[ "$p" = "$pid" ] || rest+=("$p")
	done
	PIDS=("${rest[@]}")
}
