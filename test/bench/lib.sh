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
