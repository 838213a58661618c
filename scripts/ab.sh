#!/usr/bin/env bash
# The main job: an A/B comparison of idle-CPU search policies with real
# benchmarks, in a VM running a sched_ext kernel. Prints the review-style
# tables and keeps the results file, the report and the plots on the host.
#
#   scripts/ab.sh [--shape 2x4] [--out DIR] [--add SRC[:DST]]... [--retries N]
#                 [-- BENCH-OPTIONS...]
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
# --retries boots the guest again when it dies (scripts/vm.sh's).
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
while [[ $# -gt 0 ]]; do
	case $1 in
	--shape) SHAPE=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--add) ADD+=(--add "$2"); shift 2 ;;
	--retries) RETRIES=$2; shift 2 ;;
	-h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--) shift; break ;;
	*) echo "ab.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
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
set +e
scripts/vm.sh --shape "$SHAPE" --timeout "$TIMEOUT" --retries "$RETRIES" --out "$OUT" --console "$OUT/console.log" "${ADD[@]}" -- \
	"sisutil-lab bench --out /results$args"
rc=$?
set -e
if [[ -f $OUT/results.json ]]; then
	echo "ab.sh: results, report and plots in $OUT"
fi
exit $rc
