#!/usr/bin/env bash
# Checks streambench against the STREAM it stands for, on this machine:
# the original (stream.c, built by you from its public source with OpenMP
# and the same array size) and `sisutil-lab streambench`, run alternately
# with the same threads and array size, each its best rate per kernel.
# Runs on any kernel (no scheduler is loaded); the point is that the two
# measure the same thing, kernel by kernel.
#
#   scripts/stream-check.sh --stream PATH [--threads N] [--elements N] [--runs N] [--rounds N]
#
# Build the original to match, e.g. for 4M elements and 20 runs:
#   gcc -O3 -fopenmp -DSTREAM_ARRAY_SIZE=4000000 -DNTIMES=20 stream.c -o stream
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/target-dir.sh
source "$ROOT/scripts/lib/target-dir.sh"
cd "$ROOT"
STREAM=
THREADS=$(nproc)
ELEMENTS=4000000
RUNS=20
ROUNDS=5
while [[ $# -gt 0 ]]; do
	case $1 in
	--stream) STREAM=$2; shift 2 ;;
	--threads) THREADS=$2; shift 2 ;;
	--elements) ELEMENTS=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	-h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "stream-check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
for n in "$THREADS" "$ELEMENTS" "$RUNS" "$ROUNDS"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "stream-check.sh: $n is not a positive number" >&2; exit 2; }
done
[[ -n $STREAM ]] || { echo "stream-check.sh: --stream PATH (the original STREAM, built as --help shows) is needed" >&2; exit 2; }
[[ -x $STREAM ]] || { echo "stream-check.sh: $STREAM is not an executable" >&2; exit 2; }
size=$("$STREAM" | sed -n 's/^Array size = \([0-9]*\).*/\1/p' | head -n1)
[[ $size == "$ELEMENTS" ]] || {
	echo "stream-check.sh: $STREAM was built for ${size:-an unknown number of} elements, not $ELEMENTS (-DSTREAM_ARRAY_SIZE)" >&2
	exit 2
}
cargo build --release --locked --workspace >&2
BIN=$TARGET/release/sisutil-lab

# Alternate the two, one line per run and kernel: "<who> <kernel> <MB/s>".
for ((r = 1; r <= ROUNDS; r++)); do
	OMP_NUM_THREADS=$THREADS OMP_PROC_BIND=false "$STREAM" |
		awk '/^(Copy|Scale|Add|Triad):/ { sub(":", "", $1); print "stream", $1, $2 }'
	"$BIN" streambench --threads "$THREADS" --elements "$ELEMENTS" --runs "$RUNS" --json |
		tail -n1 | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
for k in ("Copy", "Scale", "Add", "Triad"):
    print("streambench", k, r[k.lower() + "_mbs"])'
done | python3 -c '
import statistics, sys
rates = {}
for who, kernel, mbs in (l.split() for l in sys.stdin):
    rates.setdefault((who, kernel), []).append(float(mbs))
print(f"{sys.argv[1]} threads, {sys.argv[2]} elements, {sys.argv[3]} rounds alternated; MB/s, mean +- stddev of the rounds")
print("%-7s %18s %18s %6s" % ("kernel", "STREAM", "streambench", "ratio"))
for k in ("Copy", "Scale", "Add", "Triad"):
    s, b = rates[("stream", k)], rates[("streambench", k)]
    sd = lambda v: statistics.stdev(v) if len(v) > 1 else 0.0
    print(f"{k:<7} {statistics.mean(s):>10.0f} +-{sd(s):>5.0f} {statistics.mean(b):>10.0f} +-{sd(b):>5.0f} {statistics.mean(b) / statistics.mean(s):>6.2f}")
' "$THREADS" "$ELEMENTS" "$ROUNDS"
