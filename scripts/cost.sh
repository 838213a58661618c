#!/usr/bin/env bash
# What the scheduler itself costs, measured in the VM with arms interleaved:
# select_cpu's and running's mean run time per call (the kernel's BPF
# run-time statistics), the userspace process's CPU time in % of one CPU,
# and its resident memory, per arm (policy, with and without scan
# statistics); each against the first arm, with Welch's p over the rounds.
# An arm's ARGS may hold bin=PATH (another build, which --add puts in the
# guest) and trace=N (one wakeup in N on record during the workload).
#
#   scripts/cost.sh [--shape 2x4] [--rounds 3] [--workload CMD] [--out DIR]
#                   [--add SRC[:DST]]... [NAME=ARGS ...]
#
# Default arms: util, util-detail, util-nostats, prop, full, none, builtin. TCG timing is
# not native timing: compare arms with each other, not with other machines.
# DIR (default runs/<date>-<shape>-cost) gets the guest's RESULT lines
# (runs.txt) and the table as Markdown (summary.md), which docs quote.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/target-dir.sh
source "$ROOT/scripts/lib/target-dir.sh"
cd "$ROOT"
SHAPE=2x4
ROUNDS=3
WORKLOAD="hackbench -g 4 -l 400"
OUT=
ARMS=()
ADD=()
while [[ $# -gt 0 ]]; do
	case $1 in
	--shape) SHAPE=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--workload) WORKLOAD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--add) ADD+=(--add "$2"); shift 2 ;;
	-h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*=*) ARMS+=("$1"); shift ;;
	*) echo "cost.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "cost.sh: --rounds wants a positive number" >&2; exit 2; }
if ((${#ARMS[@]} == 0)); then
	ARMS=("util=--policy util" "util-detail=--policy util --detail-stats"
		"util-nostats=--policy util --no-scan-stats"
		"prop=--policy prop" "full=--policy full" "none=--policy none"
		"builtin=--policy builtin")
fi
arms=""
for a in "${ARMS[@]}"; do
	arms+="${a%%=*} ${a#*=}"$'\n'
done

if [[ $(id -u) -eq 0 ]]; then
	scripts/setup.sh >/dev/null
fi
cargo build --release --locked --workspace

OUT=${OUT:-runs/$(date -u +%Y%m%d)-$SHAPE-cost}
mkdir -p "$OUT"
out=$OUT/runs.txt
scripts/vm.sh --shape "$SHAPE" --timeout 3600 "${ADD[@]}" -- \
	"ARMS='$arms' ROUNDS=$ROUNDS WORKLOAD='$WORKLOAD' sh /guest/cost.sh" | grep '^RESULT' | tee "$out" || true
[[ -s $out ]] || { echo "cost.sh: the guest reported no run" >&2; exit 1; }

echo
echo "shape $SHAPE, $ROUNDS round(s) of: $WORKLOAD (arms interleaved; mean +- stddev)"
# The lab sets the arms side by side, with Welch's test against the first.
"$TARGET/release/sisutil-lab" cost-summary "$out" | tee "$OUT/summary.md"
echo "cost.sh: the runs and the table in $OUT"
