# The scheduler core on 2 LLCs x 4 CPUs: it refuses bad starts with one
# clear line, loads, schedules hackbench and tbench, publishes SIS_UTIL's
# depth (the LLC width while idle, less under load), and unloads cleanly on
# SIGINT and SIGTERM.
# shape: 2x4
. /tests/vm/lib.sh

log "bad input, nothing loaded"
expect_error 2 "interval-ms" $SCHED --interval-ms 0
expect_error 2 "policy" $SCHED --policy fast
expect_error 1 "no scx_sisutil instance is running" $SCHED status
expect_error 1 "no scx_sisutil instance is running" $SCHED stats
expect_error 1 "must run as root" su -s /bin/sh nobody -c "$SCHED --policy util"
check "nothing loaded by the refused starts" [ "$(state)" = disabled ]

log "load"
# The scheduler prints its stats itself: an exec'd client would load the
# very CPUs it measures.
check "scx_sisutil --policy util loads" start_sched /tmp/sched.log --policy util --stats 0.5 --json
check "state is enabled" [ "$(state)" = enabled ]
check "root/ops names the scheduler" grep -q '^sisutil' /sys/kernel/sched_ext/root/ops
expect_error 1 "already running" $SCHED --policy util
check "a refused second start leaves the first loaded" [ "$(state)" = enabled ]

log "idle: every LLC gets a full-width depth"
# Boot-time work may still keep an LLC busy for a moment: the depth must
# reach the width within 10 s of idling.
n=0
while :; do
	sleep 1
	n=$((n + 1))
	idle=$(json_lines /tmp/sched.log.out | tail -n1)
	widths=$(get 'llcs.*.width' "$idle")
	depths=$(get 'llcs.*.nr_idle_scan' "$idle")
	if all_equal 4 $depths $widths || [ $n -ge 10 ]; then
		break
	fi
done
log "after ${n}s: widths:" $widths "nr_idle_scan:" $depths
check "nr_idle_scan is the LLC width (4) while idle" all_equal 4 $depths $widths

log "hackbench under the scheduler"
from=$(wc -l </tmp/sched.log.out)
hackbench -g 4 -l 800 >/tmp/hb.log 2>&1
hb_rc=$?
cat /tmp/hb.log
check "hackbench completed" [ $hb_rc -eq 0 ]
check "hackbench reported its time" grep -q '^Time:' /tmp/hb.log
min=$(min_field "llcs.*.nr_idle_scan" /tmp/sched.log.out "$from")
log "lowest nr_idle_scan published under hackbench: $min"
check "nr_idle_scan dropped below the width under load" [ "${min:-4}" -lt 4 ]
busy=$($SCHED stats --json)
check "the scheduler placed wakeups" [ "$(get wakeups "$busy")" -gt 100 ]

log "tbench under the scheduler"
tbench_srv >/dev/null 2>&1 &
srv=$!
sleep 1
tbench -t 5 -c /usr/share/dbench/client.txt 8 127.0.0.1 >/tmp/tb.log 2>&1
tb_rc=$?
kill $srv
tail -n 3 /tmp/tb.log
check "tbench completed" [ $tb_rc -eq 0 ]
check "tbench reported its throughput" grep -q 'Throughput' /tmp/tb.log

log "unload on SIGINT"
stop_sched INT
check "exit code 0 after SIGINT" [ "$SCHED_RC" -eq 0 ]
check "state is disabled after SIGINT" wait_state disabled 10
check "the exit reason is printed" grep -q "EXIT: unregistered from user space" /tmp/sched.log

log "unload on SIGTERM"
check "loads again at once" start_sched /tmp/sched2.log --policy util

# The control loop sleeps to its next interval (16 ms by default). Waiting
# on the request channel with a timeout instead spun and called
# sched_yield() about eight times an interval, which under load is CPU
# taken from the workload being measured.
log "the control loop sleeps between intervals"
check "perf is installed" command -v perf
perf stat -x, -e syscalls:sys_enter_sched_yield,raw_syscalls:sys_enter -t "$SCHED_PID" \
	-- sleep 5 2>/tmp/loop.csv
cat /tmp/loop.csv
yields=$(perf_count sched_yield /tmp/loop.csv)
calls=$(perf_count raw_syscalls /tmp/loop.csv)
check "no sched_yield() in 5 s" [ "${yields:-1}" -eq 0 ]
# 5 s / 16 ms = 312 intervals, each one sleep
check "at most ~1.5 system calls an interval ($calls in 312 intervals)" [ "${calls:-9999}" -le 470 ]
stop_sched TERM
check "exit code 0 after SIGTERM" [ "$SCHED_RC" -eq 0 ]
check "state is disabled after SIGTERM" wait_state disabled 10

finish
