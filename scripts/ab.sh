#!/usr/bin/env bash
# The main job: an A/B comparison of idle-CPU search policies with real
# benchmarks, in a VM running a sched_ext kernel. Prints the review-style
# tables and keeps the results file, the report and the plots on the host.
#
#   scripts/ab.sh [--shape 2x4] [--out DIR] [--add SRC[:DST]]... [--retries N]
#                 [--resume] [-- BENCH-OPTIONS...]
#
# BENCH-OPTIONS go to `sisutil-lab bench` (arms, benchmarks, sizes; see
# `sisutil-lab bench --help`), e.g.
#   scripts/ab.sh --shape 1x8 -- --arms eevdf,eevdf-nosisutil,util,full --bench hackbench
# Results land in runs/<date>-<shape>/ unless --out says otherwise (runs/
# is yours: git ignores it; results/ holds the runs the documents cite).
# --add puts a program into the guest (scripts/vm.sh's --add): a peer
# scheduler for --arm NAME=COMMAND, or a schbench you built for --bench
# schbench, e.g. --add ~/schbench/schbench:/usr/bin/schbench. On a machine
# with sched_ext, run `sudo sisutil-lab bench ...` directly instead.
# The guest sends its results out every few minutes while the run goes on
# (a checkpoint), so a guest that dies leaves the samples it took in DIR.
# --retries N boots it again up to N times when it dies, taking the run up
# from the samples it left; --resume takes up the run DIR holds (the same
# BENCH-OPTIONS and build): either keeps its samples and runs the rest.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/target-dir.sh
source "$ROOT/scripts/lib/target-dir.sh"
cd "$ROOT"
SHAPE=2x4
OUT=
TIMEOUT=21600
ADD=()
RETRIES=0
RESUME=0
while [[ $# -gt 0 ]]; do
	case $1 in
	--shape) SHAPE=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--add) ADD+=(--add "$2"); shift 2 ;;
	--retries) RETRIES=$2; shift 2 ;;
	--resume) RESUME=1; shift ;;
	-h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--) shift; break ;;
	*) echo "ab.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $RETRIES =~ ^[0-9]+$ ]] || { echo "ab.sh: --retries wants a number" >&2; exit 2; }
if ((RESUME)) && [[ ! -f $OUT/results.json ]]; then
	echo "ab.sh: --resume wants --out DIR of a run that left DIR/results.json" >&2
	exit 2
fi
OUT=${OUT:-runs/$(date -u +%Y%m%d-%H%M%S)-$SHAPE}

if [[ $(id -u) -eq 0 ]]; then
	scripts/setup.sh >/dev/null
fi
cargo build --release --locked --workspace

args=""
for a in "$@"; do
	args+=" '${a//\'/\'\\\'\'}'"
done
# The guest kernel's console stays beside the results (ignored by git): the
# first place to look when a run stops.
mkdir -p "$OUT"
# boot: one guest for the run, taking it up from DIR/results.json when
# RESUME is set; the logs of a boot that came before are kept beside it
# under their boot's number.
boot() {
	local from=() resume=""
	if ((RESUME)); then
		local n=1 f
		while [[ -e $OUT/boot$n-console.log ]]; do n=$((n + 1)); done
		for f in console.log scheduler.log last-run.log; do
			[[ -f $OUT/$f ]] && mv "$OUT/$f" "$OUT/boot$n-$f"
		done
		from=(--add "$OUT/results.json:/resume/results.json")
		resume=" --resume /resume/results.json"
	fi
	scripts/vm.sh --shape "$SHAPE" --timeout "$TIMEOUT" --out "$OUT" --console "$OUT/console.log" \
		"${ADD[@]}" "${from[@]}" -- \
		"sisutil-lab bench --out /results --checkpoint /checkpoint$resume$args"
}
set +e
for ((boots = 0; ; boots++)); do
	boot
	rc=$?
	# 125: the guest died (scripts/vm.sh).
	((rc == 125 && boots < RETRIES)) || break
	if [[ -f $OUT/results.json ]]; then
		RESUME=1
		echo "ab.sh: the guest died; taking the run up from its last checkpoint ($((boots + 1)) of $RETRIES)" >&2
	else
		echo "ab.sh: the guest died before its first checkpoint; starting again ($((boots + 1)) of $RETRIES)" >&2
	fi
done
set -e
if [[ -f $OUT/results.json ]]; then
	echo "ab.sh: results, report and plots in $OUT"
fi
exit $rc
