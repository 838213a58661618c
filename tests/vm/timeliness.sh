# The scheduler's own loop on time under saturation (2 LLCs x 4 CPUs): at
# hackbench 16 groups and at tbench 4x the CPUs, while a client asks for the
# statistics every 2 s, the scheduler's threads are queued first, the
# intervals' lateness stays within the depth's bound (p99 within 4
# intervals, where the loop without that precedence was late by 440 ms at
# p99) and the median request is answered within 100 ms of its arrival
# (835 ms without, 496 ms when the budget of that precedence counted what
# the threads ran in the queues as debt).
#
# The target, lateness p99 within one interval, is held from the floor
# the VM sets: a real-time thread (cyclictest, SCHED_FIFO, which preempts
# any sched_ext task) woken every interval over the same window. Under
# TCG, with 8 vCPUs on 2 host cores, a vCPU waits for its host core, and
# that thread's own p99 was 27 to 41 ms
# (results/20261207-2x4-loop-floor); the loop's must be within one
# interval of it (without the precedence it was 440 ms). The other
# target, every request within 100 ms, is printed, not held: a request
# is two wakeups (the socket's thread, then the loop), each as late as
# the floor's slowest (33 to 85 ms there).
#
# Then the bound itself: with the
# scheduler's process stopped (SIGSTOP) under load, the scans derive their
# depth rather than read the stale one, the lateness statistics show the
# stop, and once it runs again the published depths are used again.
# shape: 2x4
# timeout: 900
. /tests/vm/lib.sh

SECS=${TIMELINESS_SECS:-12}
NCPU=$(nproc)
INTERVAL_US=16000
export SCX_TIMEOUT_MS=10000

# show JSON NAME...: "NAME=VALUE" of each, on one line.
show() {
	_j=$1
	shift
	for _n in "$@"; do printf '%s=%s ' "$_n" "$(get "$_n" "$_j" 2>/dev/null)"; done
}
LOOP="loop_interval_ms loop_intervals loop_late_p50_us loop_late_p99_us loop_late_max_us loop_skipped"

# ask: a client asking for the statistics every 2 s (--monitor), started
# before the load so that its own start does not wait behind the load.
ask() {
	$SCHED --monitor 2 --json >/tmp/monitor.json 2>/tmp/monitor.err &
	MON=$!
	for _ in $(seq 60); do [ -s /tmp/monitor.json ] && break; sleep 1; done
}

# floor_start / floor_end: the VM's own floor over the same window, a
# real-time thread (cyclictest at SCHED_FIFO 80, above anything a
# sched_ext scheduler can give) woken every interval; FLOOR gets its
# lateness, "p50 p99 max" in us. Started at that priority, so that its
# start does not wait behind the load, and stopped when the client is, so
# that it covers the window the scheduler's statistics do (12 s of sleep
# in this shell, an ordinary task, last a minute or more under the load).
floor_start() {
	rm -f /tmp/floor.json
	chrt -f 80 cyclictest -m -q -p 80 -t 1 -i $INTERVAL_US -h 2000000 \
		--json=/tmp/floor.json >/dev/null 2>&1 &
	FLOOR_PID=$!
}
floor_end() {
	kill -INT $FLOOR_PID 2>/dev/null
	wait $FLOOR_PID 2>/dev/null
	FLOOR=$(awk '/"histogram"/ { h = 1; next }
		h && /}/ { h = 0 }
		h { gsub(/[",:]/, " "); v[n] = $1; c[n++] = $2; t += $2 }
		/"max"/ { gsub(/[",:]/, " "); max = $2 }
		END {
			for (i = 0; i < n; i++) {
				s += c[i]
				if (!p50 && s >= t * 0.5) p50 = v[i]
				if (!p99 && s >= t * 0.99) p99 = v[i]
			}
			printf "%d %d %d", p50, p99 ? p99 : max, max
		}' /tmp/floor.json 2>/dev/null)
}

# under_load: SECS seconds of the load running in the background,
# statistics restarted when it is under way, the client asking all along;
# STATS gets its last record. One client process for the window: a new
# client per request took seconds to start under this load, and a
# 12-second window lasted two minutes.
under_load() {
	sleep 3
	$SCHED reset-stats >/dev/null
	floor_start
	sleep "$SECS"
	kill $MON 2>/dev/null
	floor_end
	wait $MON 2>/dev/null
	# The last whole line: the client may have been stopped mid-line.
	STATS=$(grep '}$' /tmp/monitor.json | tail -n 1)
}

# on_time WHAT: the checks on STATS after a load, once it is gone (each
# read starts a process, which under the load waits seconds).
on_time() {
	log "$1: $(show "$STATS" $LOOP requests request_p50_us request_p99_us request_max_us stale_depths own_first)"
	_n=$(get loop_intervals "$STATS")
	_skipped=$(get loop_skipped "$STATS")
	_p99=$(get loop_late_p99_us "$STATS")
	_req=$(get requests "$STATS")
	_rp50=$(get request_p50_us "$STATS")
	# SECS of 16 ms intervals, less what the last request's own wait took.
	check "$1: the loop ran its intervals ($_n, $_skipped skipped)" [ "$_n" -ge $((SECS * 1000000 / INTERVAL_US * 3 / 4)) ]
	check "$1: the scheduler's own threads were queued first" [ "$(get own_first "$STATS")" -gt 0 ]
	check "$1: interval lateness p99 within the depth's bound, 4 intervals ($_p99 us)" [ "$_p99" -le $((4 * INTERVAL_US)) ]
	check "$1: the client's requests were counted ($_req)" [ "$_req" -ge 2 ]
	check "$1: the median request answered within 100 ms of arrival ($_rp50 us)" [ "$_rp50" -le 100000 ]
	# The target, one interval at p99, from where the VM lets any task
	# start: the real-time thread's own p99 is more than an interval here.
	_fp99=$(echo "$FLOOR" | awk '{ print $2 }')
	if [ -n "$_fp99" ] && [ "$_fp99" -gt 0 ]; then
		check "$1: interval lateness p99 within one interval of the VM's floor ($_p99 us; a real-time thread's p99 $_fp99 us)" \
			[ "$_p99" -le $((_fp99 + INTERVAL_US)) ]
	else
		skip "$1: interval lateness against the VM's floor" "cyclictest did not run"
	fi
	log "$1, the VM's floor (a real-time thread woken every interval, late by p50 p99 max us): $FLOOR"
	log "$1, the targets: lateness p99 $_p99 us against one interval, $INTERVAL_US us; the slowest request $(get request_max_us "$STATS") us against 100000 us; $(get stale_depths "$STATS") scans found their depth older than the bound"
}

check "loads" start_sched /tmp/sched.log --policy util
_ttl=$(get depth_ttl_ms "$($SCHED stats --json)")
check "the bound is 4 intervals ($_ttl ms)" [ "$_ttl" -eq 64 ]

log "hackbench 16 groups for ${SECS}s"
ask
hackbench -g 16 -l 100000000 >/dev/null 2>&1 &
hb=$!
under_load
kill $hb 2>/dev/null
wait $hb 2>/dev/null
on_time "hackbench 16 groups"

log "tbench $((4 * NCPU)) clients for ${SECS}s"
ask
tbench_srv >/dev/null 2>&1 &
srv=$!
tbench -t $((SECS + 6)) -c /usr/share/dbench/client.txt $((4 * NCPU)) 127.0.0.1 >/tmp/tbench.log 2>&1 &
tb=$!
under_load
wait $tb 2>/dev/null
kill $srv 2>/dev/null
on_time "tbench $((4 * NCPU)) clients"

log "the scheduler's process stopped for 2 s under hackbench 4 groups"
hackbench -g 4 -l 100000000 >/dev/null 2>&1 &
hb=$!
sleep 2
$SCHED reset-stats >/dev/null
kill -STOP "$SCHED_PID"
sleep 2
kill -CONT "$SCHED_PID"
sleep 1
STATS=$($SCHED stats --json)
stale=$(get stale_depths "$STATS")
late=$(get loop_late_max_us "$STATS")
skipped=$(get loop_skipped "$STATS")
log "stopped: stale_depths $stale, loop_late_max_us $late, loop_skipped $skipped"
check "scans derived their depth while the loop was stopped ($stale)" [ "$stale" -gt 0 ]
check "the lateness shows the stop (max $late us)" [ "$late" -ge 1500000 ]
check "... and the intervals it skipped ($skipped)" [ "$skipped" -ge 90 ]
$SCHED reset-stats >/dev/null
sleep 3
STATS=$($SCHED stats --json)
# Not none: under TCG an interval is now and then late past the bound
# (by up to half a second at hackbench 16 above), and the scans derive
# theirs until the next one: 20 and 370 stale in two runs (of 32858 scans
# in the second), 1516 when the precedence's budget went into debt, where
# a stopped loop leaves every scan stale.
stale=$(get stale_depths "$STATS")
scans=$(get scans "$STATS")
check "and scans happened meanwhile ($scans)" [ "$scans" -gt 0 ]
check "running again, the published depths are used (at most 5 % stale: $stale)" [ $((stale * 20)) -le "$scans" ]
kill $hb 2>/dev/null
wait $hb 2>/dev/null

check "still loaded" [ "$(state)" = enabled ]
stop_sched TERM
check "exit code 0 on SIGTERM" [ "$SCHED_RC" -eq 0 ]
check "no stall" kernel_clean
finish
