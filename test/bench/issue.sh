#!/usr/bin/env bash
# Times one ECDSA P-256 client certificate (CN=nakam, O=devops) issued by
# three tools against the same CA, alternating them in one run so that
# load on the machine affects all three alike:
#   kubegate cert issue
#   openssl genpkey + req + x509 -req
#   cfssl gencert | cfssljson -bare
# Each round starts with a different tool. `kubegate version` runs in the
# same rotation: it issues nothing, so its time is the binary's start-up
# (process start plus every linked package's init), the floor under any
# kubegate command.
# Prints the median and mean per-cert time of each and kubegate's ratios,
# the time kubegate's package initialisation takes and its costliest
# packages, then times `kubegate cert issue --from-file` with FROM_FILE
# identities (default 5000; 0 skips it) to the work directory's file system
# and, when present, to /dev/shm (tmpfs), with the CPU time per certificate.
# Usage: test/bench/issue.sh [ROUNDS]   (default 40)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-40}
from_file=${FROM_FILE:-5000}
for t in openssl cfssl cfssljson go; do
  command -v "$t" >/dev/null || { echo "issue.sh: $t is not installed" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/kubegate" ./cmd/kubegate
kg=$work/kubegate
"$kg" pki init --dir "$work/tree" 2>/dev/null
ca=$work/tree/pki/ca.crt cakey=$work/tree/pki/ca.key

cat >"$work/csr.json" <<'JSON'
{"CN":"nakam","key":{"algo":"ecdsa","size":256},"names":[{"O":"devops"}]}
JSON
cat >"$work/cfssl.json" <<'JSON'
{"signing":{"default":{"expiry":"8760h","usages":["digital signature","client auth"]}}}
JSON
printf 'keyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' >"$work/ext.cnf"

run_version() {
  "$kg" version >/dev/null
}
run_kubegate() {
  "$kg" cert issue --dir "$work/tree" --cn nakam --org devops --out "$work/kg-$1" 2>/dev/null
}
run_openssl() {
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/os-$1.key" 2>/dev/null
  openssl req -new -key "$work/os-$1.key" -subj "/O=devops/CN=nakam" -out "$work/os-$1.csr"
  openssl x509 -req -in "$work/os-$1.csr" -CA "$ca" -CAkey "$cakey" -CAcreateserial \
    -days 365 -extfile "$work/ext.cnf" -out "$work/os-$1.crt" 2>/dev/null
}
run_cfssl() {
  cfssl gencert -ca "$ca" -ca-key "$cakey" -config "$work/cfssl.json" "$work/csr.json" 2>/dev/null |
    cfssljson -bare "$work/cf-$1"
}

now_ns() { date +%s%N; }
declare -A times
tools=(kubegate openssl cfssl version)
for ((i = 0; i < rounds; i++)); do
  for ((j = 0; j < ${#tools[@]}; j++)); do
    t=${tools[(i + j) % ${#tools[@]}]}
    s=$(now_ns)
    "run_$t" "$i"
    e=$(now_ns)
    times[$t]+="$(((e - s) / 1000)) "
  done
done

# Every tool must have produced a cert that verifies against the CA.
openssl verify -CAfile "$ca" "$work/kg-0.crt" "$work/os-0.crt" "$work/cf-0.pem" >/dev/null

stats() { # prints "median mean" in ms of the microsecond list $1
  tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -n |
    awk '{a[NR]=$1; s+=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.2f %.2f", m/1000, s/NR/1000}'
}
echo "ECDSA P-256 client cert, $rounds alternating rounds, $(nproc) CPUs"
printf '%-10s %12s %12s\n' tool "median ms" "mean ms"
declare -A med
for t in "${tools[@]}"; do
  read -r m a <<<"$(stats "${times[$t]}")"
  med[$t]=$m
  printf '%-10s %12s %12s\n' "$t" "$m" "$a"
done
awk -v k="${med[kubegate]}" -v o="${med[openssl]}" -v c="${med[cfssl]}" 'BEGIN {
  printf "ratio kubegate/openssl pipeline: %.2f\n", k/o
  printf "ratio kubegate/cfssl pipeline:   %.2f (target <= 1.0)\n", k/c }'
awk -v v="${med[version]}" -v c="${med[cfssl]}" 'BEGIN {
  printf "ratio kubegate version/cfssl:    %.2f (start-up alone, no certificate)\n", v/c }'

# Where start-up goes: package initialisation as the Go runtime reports it
# (GODEBUG=inittrace=1), summed over every linked package, median of 9 runs,
# and the packages that cost most.
for ((i = 0; i < 9; i++)); do
  GODEBUG=inittrace=1 "$kg" version 2>&1 >/dev/null | awk -v run="$i" '$1 == "init" {print run, $2, $5}'
done >"$work/inittrace"
awk '{t[$1] += $3} END {for (r in t) print t[r]}' "$work/inittrace" | sort -n |
  awk '{a[NR] = $1} END {printf "package init in kubegate version: %.2f ms (median of %d runs)\n", a[int((NR + 1) / 2)], NR}'
awk '{s[$2] += $3; n[$2]++} END {for (p in s) printf "%.2f %s\n", s[p] / 9, p}' "$work/inittrace" | sort -rn | head -5 |
  awk '{printf "  %6.2f ms  %s\n", $1, $2}'

((from_file > 0)) || exit 0
for ((i = 0; i < from_file; i++)); do echo "user$i,devops,devs"; done >"$work/users.csv"
from_file_run() { # $1: output directory
  rm -rf "$1"
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$kg" cert issue --dir "$work/tree" \
    --from-file "$work/users.csv" --out "$1" 2>/dev/null
  read -r wall user sys <"$work/time"
  rm -rf "$1"
  awk -v n="$from_file" -v w="$wall" -v u="$user" -v s="$sys" -v d="$1" 'BEGIN {
    printf "from-file %d certs to %-28s %6.0f certs/s, CPU per cert: user %.0f us, sys %.0f us\n",
      n, d, n/w, u/n*1e6, s/n*1e6 }'
}
from_file_run "$work/users"
if [[ -d /dev/shm && -w /dev/shm ]]; then
  shm=$(mktemp -d /dev/shm/kubegate-bench.XXXXXX)
  trap 'rm -rf "$work" "$shm"' EXIT
  from_file_run "$shm/users"
fi
