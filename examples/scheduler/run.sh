#!/bin/sh
# Explain one pod's placement on three nodes under the pre-1.20 weights,
# where a hidden weight-10000 plugin decides, and under today's.
set -eu
cd "$(dirname "$0")"
KUBEGATE=${KUBEGATE:-kubegate}
echo "== old weights: visible scores 290/280/290 (29/28/29 on the old 0..10 scale), NodePreferAvoidPods x10000 decides =="
"$KUBEGATE" scheduler explain --nodes nodes.yaml --pod pod.json --config profile-old.yaml
echo
echo "== current weights =="
"$KUBEGATE" scheduler explain --nodes nodes.yaml --pod pod.json --config profile-current.yaml
