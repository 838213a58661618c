#!/bin/sh
# Runs in the guest: tbench at 4 clients under EEVDF, then under
# scx_sisutil --policy util, recording the scheduler tracepoints for 2 s of
# each into /results/{eevdf,util}.txt for wakeups.py. Run from the project:
#   scripts/vm.sh --shape 2x4 --add results/20261201-2x4-perf/trace/trace.sh:/usr/bin/trace.sh \
#     --out OUT -- trace.sh
out=/results
tbench_srv >/dev/null 2>&1 &
srv=$!
sleep 1
run() {
	tbench -t 14 -c /usr/share/dbench/client.txt 4 127.0.0.1 > $out/$1.tbench 2>&1 &
	tb=$!
	sleep 6
	perf record -a -e sched:sched_switch,sched:sched_wakeup,sched:sched_migrate_task,sched:sched_waking -o $out/$1.data -- sleep 2 2>/dev/null
	wait $tb
	tail -1 $out/$1.tbench
	perf script -i $out/$1.data -F cpu,time,event,trace > $out/$1.txt 2>/dev/null
	rm -f $out/$1.data
}
run eevdf
scx_sisutil --policy util > $out/sched.log 2>&1 &
s=$!
sleep 4
run util
kill -INT $s; wait $s
kill $srv
