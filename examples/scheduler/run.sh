#!/usr/bin/env bash
# Explain one pod's placement on three nodes under the pre-1.20 weights,
# where a hidden weight-10000 plugin decides, and under today's.
. "$(dirname "$0")/../lib.sh"
example_init 60
cp "$EXAMPLES"/scheduler/{nodes.yaml,pod.json,profile-old.yaml,profile-current.yaml} .

step "old weights: visible scores 290/280/290 (29/28/29 on the old 0..10 scale), NodePreferAvoidPods x10000 decides"
run kubegate scheduler explain --nodes nodes.yaml --pod pod.json --config profile-old.yaml
echo

step "current weights"
run kubegate scheduler explain --nodes nodes.yaml --pod pod.json --config profile-current.yaml
echo
