#!/usr/bin/env bash
# The scheduler at size: for every shape, boot a VM, load scx_sisutil,
# record the instructions the verifier walked per program, run a short
# hackbench under it and unload it, timing each step. This is how the
# review's 256-CPU machine (2s8l8c2t in NPS1/2/4) is checked, and how the
# verifier's growth with the CPU count is seen.
#
#   scripts/scale.sh [--shapes 2s2l2c,2s4l4c-nps2,...] [--mem M] [--timeout S]
#                    [--append KERNEL-ARGS] [--out DIR]
#
# DIR/<shape>.txt holds the guest's findings, DIR/summary.md one row per
# shape. Under TCG a guest's boot grows with its vCPUs: give big shapes
# time (--timeout, per shape) and memory (--mem, at least 64M per node).
# Above about 128 vCPUs the guest spends minutes calibrating every CPU's
# delay loop: --append "lpj=N" (N from a smaller boot's console) skips it.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SHAPES=2s2l2c,2s4l4c-nps1,2s4l4c-nps2,2s4l4c-nps4
MEM=4G
TIMEOUT=3600
OUT=runs/$(date -u +%Y%m%d)-scale
APPEND=
while [[ $# -gt 0 ]]; do
	case $1 in
	--shapes) SHAPES=$2; shift 2 ;;
	--mem) MEM=$2; shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--append) APPEND=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	-h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "scale.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
mkdir -p "$OUT"

# value KEY FILE: the rest of the line that starts with KEY.
value() { sed -n "s/^$1 //p" "$2" | head -n1; }

summary=$OUT/summary.md
{
	echo "| shape | CPUs | LLCs | nodes | boot s | wall s | load s | verifier instructions | hackbench s | unload |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
} >"$summary"
status=0
IFS=, read -r -a shapes <<<"$SHAPES"
for shape in "${shapes[@]}"; do
	f=$OUT/$shape.txt
	echo "=== $shape"
	start=$(date +%s)
	rc=0
	scripts/vm.sh --shape "$shape" --mem "$MEM" --timeout "$TIMEOUT" ${APPEND:+--append "$APPEND"} \
		--console "$OUT/$shape.console" -- sh /guest/scale.sh | tee "$f" || rc=$?
	wall=$(($(date +%s) - start))
	echo "wall_s $wall" >>"$f"
	((rc == 0)) || status=1
	unload="exit $(value exit "$f"), $(value state "$f")"
	((rc == 0)) || unload="failed (vm.sh exit $rc)"
	echo "| $shape | $(value cpus "$f") | $(value llcs "$f") | $(value nodes "$f") | $(value boot_s "$f") | $wall | $(value load_s "$f") | $(value verifier "$f") | $(value hackbench_s "$f" | cut -d' ' -f1) | $unload |" >>"$summary"
done
echo "scale.sh: findings in $OUT/<shape>.txt, one row per shape in $summary"
exit $status
