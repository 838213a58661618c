# Under load (2 LLCs x 4 CPUs), for every policy and then while switching
# policies every second: stress-ng CPU and fork stressors on every CPU with
# changing affinities, hackbench with more groups than CPUs, and tbench at
# 4x the CPUs, all for STRESS_SECS (12) seconds at once. Nothing may stall,
# the scheduler must still be loaded after each round, exit 0 on SIGTERM,
# and the kernel log must hold no sched_ext error or stall line. The
# sched_ext watchdog is set to 10 s: no task may wait that long. Nor may
# RCU report a stall (a task preempted inside a read-side section left
# waiting 21 s), for which sched_ext also unloads the scheduler.
# shape: 2x4
# timeout: 1200
. /tests/vm/lib.sh

SECS=${STRESS_SECS:-12}
NCPU=$(nproc)
# A task left runnable for 10 s is a stall: a third of the kernel's default
# watchdog, so that starvation shows up instead of hiding under a long
# timeout.
export SCX_TIMEOUT_MS=10000

# load SECONDS: the three loads at once, for that long.
load() {
	stress-ng -t "$1" --aggressive -M -c "$NCPU" -f "$NCPU" --affinity "$NCPU" \
		--affinity-delay 1 --affinity-pin >/tmp/stress-ng.log 2>&1 &
	sng=$!
	hackbench -g $((NCPU + 4)) -l 100000000 >/dev/null 2>&1 &
	hb=$!
	tbench -t "$1" -c /usr/share/dbench/client.txt $((4 * NCPU)) 127.0.0.1 >/tmp/tbench.log 2>&1 &
	tb=$!
	sleep "$1"
	kill $hb 2>/dev/null
	wait $sng $hb $tb 2>/dev/null
	# stress-ng 0.15's own metric checks may fail (exit 2) with any
	# scheduler; what counts is the scheduler's state and the kernel log.
	grep -q Throughput /tmp/tbench.log
}

tbench_srv >/dev/null 2>&1 &
srv=$!
check "loads" start_sched /tmp/sched.log --policy util

for p in ${STRESS_POLICIES:-$(policies)}; do
	log "$p under load for ${SECS}s"
	check "switched to $p" switch_to $p
	check "tbench finished under $p" load "$SECS"
	check "still loaded after the load under $p" [ "$(state)" = enabled ]
	check "the scheduler process is alive" kill -0 "$SCHED_PID"
	check "no stall so far" kernel_clean
done

log "switching policies every second under load for ${SECS}s"
# Every answer goes to /tmp/switches: one line per switch, the policy
# asked for and the one the instance answered with.
(
	i=0
	while [ $i -lt "$SECS" ]; do
		for p in $(policies); do
			echo "$p $($SCHED set policy $p 2>&1 | cut -d, -f1)" >>/tmp/switches
			sleep 1
			i=$((i + 1))
		done
	done
) &
sw=$!
check "tbench finished while switching" load "$SECS"
wait $sw
check "still loaded after switching under load" [ "$(state)" = enabled ]
n=$(wc -l </tmp/switches)
bad=$(awk '$2 != "policy" || $3 != $1' /tmp/switches | wc -l)
log "$n switches under load, $bad not answered with the policy asked for"
awk '$2 != "policy" || $3 != $1' /tmp/switches | head -n 5 | sed 's/^/#   /'
check "it switched all along (about one a second)" [ "$n" -ge $((SECS * 3 / 4)) ]
check "every switch was answered with the policy asked for" [ "$bad" -eq 0 ]
check "the instance logged each of them" [ "$(grep -c 'switched:' /tmp/sched.log)" -ge "$n" ]

kill $srv 2>/dev/null
stop_sched TERM
check "exit code 0 on SIGTERM" [ "$SCHED_RC" -eq 0 ]
check "state disabled" wait_state disabled 10
log "kernel log, sched_ext lines:"
dmesg | grep -i sched_ext | sed 's/^/#   /'
finish
