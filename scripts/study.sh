#!/usr/bin/env bash
# The review's study on a current kernel: SIS_UTIL against SIS_PROP (and
# EEVDF, the small-LLC rule, full and builtin) on the review's LLC shapes,
# in VMs, with the review's benchmark families and explanatory tables.
#
#   scripts/study.sh [--quick] [--shapes 1x16,2x8,1x8x2] [--arms A,B,...]
#                    [--steps hackbench,tbench,wakeup,services,shadow]
#                    [--iterations N] [--out DIR]
#
# Shapes are scripts/vm.sh's: LxC[xT], or SsLlCc[Tt][-npsN] for sockets of
# several LLCs in NUMA nodes (2s4l4c-nps1,2s4l4c-nps2,2s4l4c-nps4 is the
# review's machine scaled down). For every shape it makes five runs with
# scripts/ab.sh (--steps picks some of them):
#   DIR/<shape>/hackbench  every arm, hackbench (processes, pipes) 1..16 groups
#   DIR/<shape>/tbench     every arm, tbench 1 client to 4x the CPUs
#   DIR/<shape>/wakeup     every arm, the wakeup-latency benchmark
#                          (schbench's pattern), 1 worker per message thread
#                          up to the CPUs
#   DIR/<shape>/services   every arm, STREAM (one thread per LLC, 10 and 100
#                          runs) and YCSB's workloads A, B, C on PostgreSQL
#                          (1 client and one per CPU)
#   DIR/<shape>/shadow     util with prop as its shadow policy: the review's
#                          "able to find" matrix and "CPU searched" histograms
#                          for hackbench 1 and 16 groups and tbench at 4x the
#                          CPUs
# Each holds results.json, report.txt and plots/; DIR/summary.md and
# DIR/plots put all shapes side by side (sisutil-lab study-summary). The
# sizes fit a 2-core host running 16-vCPU VMs under TCG: about 17 minutes a
# shape. --quick runs tiny sizes to check it end to end. --iterations sets
# how often every point runs, arms interleaved (3; 2 with --quick).
#
# Loading a scheduler patches kernel text, and 16 vCPUs under TCG have
# crashed on it (an int3 oops in sched_tick just after "enabled", about once
# in 20 loads): the runs are kept short, and one whose guest died is run
# again.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/target-dir.sh
source "$ROOT/scripts/lib/target-dir.sh"
cd "$ROOT"
SHAPES=1x16,2x8,1x8x2
ARMS=eevdf,util,prop,util-small,full,builtin
OUT=runs/study-$(date -u +%Y%m%d-%H%M%S)
PRESET=study
ITER=3
STEPS=hackbench,tbench,wakeup,services,shadow
while [[ $# -gt 0 ]]; do
	case $1 in
	--quick) PRESET=quick; ITER=2; shift ;;
	--shapes) SHAPES=$2; shift 2 ;;
	--arms) ARMS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--steps) STEPS=$2; shift 2 ;;
	--iterations) ITER=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "study.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $ITER =~ ^[1-9][0-9]*$ ]] || { echo "study.sh: --iterations wants a positive number" >&2; exit 2; }

if [[ $(id -u) -eq 0 ]]; then
	scripts/setup.sh >/dev/null
fi
cargo build --release --locked --workspace
LAB=$TARGET/release/sisutil-lab

# cpus SHAPE: how many CPUs a shape has (the lab reads the grammar).
cpus() { "$LAB" shape "$1" | sed -n 's/^NCPUS=//p'; }

# ab ARGS...: scripts/ab.sh, booted up to twice more when the guest dies.
ab() { scripts/ab.sh --retries 2 "$@"; }

IFS=, read -r -a shapes <<<"$SHAPES"
IFS=, read -r -a steps <<<"$STEPS"
for step in "${steps[@]}"; do
	[[ $step =~ ^(hackbench|tbench|wakeup|services|shadow)$ ]] || {
		echo "study.sh: unknown step $step (hackbench, tbench, wakeup, services, shadow)" >&2
		exit 2
	}
done
# step NAME: whether --steps asked for NAME.
step() { [[ ,$STEPS, == *,$1,* ]]; }
for shape in "${shapes[@]}"; do
	"$LAB" shape "$shape" >/dev/null || exit 2
done

for shape in "${shapes[@]}"; do
	n=$(cpus "$shape")
	# The lab's study preset sizes the matrix from the guest's CPUs.
	arms=(--preset "$PRESET" --iterations "$ITER" --arms "$ARMS")
	# The matrix families: every arm at the shape's sizes.
	for bench in hackbench tbench wakeup; do
		step "$bench" || continue
		echo "=== $shape ($n CPUs): $bench, all arms"
		ab --shape "$shape" --out "$OUT/$shape/$bench" -- "${arms[@]}" --bench "$bench"
	done
	if step services; then
		echo "=== $shape ($n CPUs): STREAM and YCSB on PostgreSQL, all arms"
		ab --shape "$shape" --out "$OUT/$shape/services" -- \
			"${arms[@]}" --bench stream,ycsb
	fi
	# The shadow's points are its own (both modes, both IPCs: the vm preset).
	if step shadow; then
		echo "=== $shape ($n CPUs): util with prop as its shadow"
		ab --shape "$shape" --out "$OUT/$shape/shadow" -- \
			--preset "${PRESET/study/vm}" --iterations "$ITER" --arms util \
			--scheduler-args "--shadow prop" \
			--bench hackbench,tbench --groups 1,16 --clients $((4 * n))
	fi
done
"$LAB" study-summary "$OUT"
echo "study.sh: results in $OUT/<shape>/{hackbench,tbench,wakeup,services,shadow}, the summary in $OUT/summary.md"
