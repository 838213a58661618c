#!/usr/bin/env bash
# Builds scx_sisutil, boots the Debian sched_ext kernel in QEMU and runs the
# scheduler there under hackbench and tbench, printing its scan statistics
# (the review thread's tables: --detail-stats) after each, then unloads it.
#
#   scripts/demo.sh [--shape 2x4] [--policy util] [--shadow prop] [-- SCHEDULER-ARGS...]
#
# Run as root the first time: it installs the packages it needs.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/target-dir.sh
source "$ROOT/scripts/lib/target-dir.sh"
cd "$ROOT"
SHAPE=2x4
POLICY=util
ARGS=(--detail-stats)
while [[ $# -gt 0 ]]; do
	case $1 in
	--shape) SHAPE=$2; shift 2 ;;
	--policy) POLICY=$2; shift 2 ;;
	--shadow) ARGS+=(--shadow "$2"); shift 2 ;;
	-h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--) shift; ARGS+=("$@"); break ;;
	*) echo "demo.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done

if [[ $(id -u) -eq 0 ]]; then
	scripts/setup.sh
fi
cargo build --release --locked --workspace

exec scripts/vm.sh --shape "$SHAPE" -- "
scx_sisutil --policy $POLICY ${ARGS[*]} 2>/tmp/sched.log &
pid=\$!
i=0
while [ \"\$(cat /sys/kernel/sched_ext/state)\" != enabled ]; do
	i=\$((i + 1)); [ \$i -gt 600 ] && { cat /tmp/sched.log; exit 1; }
	kill -0 \$pid 2>/dev/null || { cat /tmp/sched.log; exit 1; }
	sleep 0.2
done
echo \"== \$(cat /sys/kernel/sched_ext/root/ops) enabled on \$(nproc) CPUs\"
sleep 2
echo; echo '== idle'; scx_sisutil stats
scx_sisutil reset-stats >/dev/null
echo; echo '== hackbench -g 4 -l 500'; hackbench -g 4 -l 500 | tail -n1
scx_sisutil stats
scx_sisutil reset-stats >/dev/null
echo; echo '== tbench, 8 clients, 10 s'
tbench_srv >/dev/null 2>&1 &
sleep 1
tbench -t 10 -c /usr/share/dbench/client.txt 8 127.0.0.1 | grep Throughput
kill %2 2>/dev/null || true
scx_sisutil stats
kill -INT \$pid; wait \$pid; rc=\$?
cat /tmp/sched.log
exit \$rc
"
