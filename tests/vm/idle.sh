# The paths a CPU takes into and out of idle (2 LLCs x 4 CPUs). A CPU that
# runs out of work reads one flag, not every queue, when nothing is queued
# anywhere, and SIS_PROP's idle periods are measured from that point to
# the next task that runs, without an update_idle op. So: work queued
# behind a busy CPU must still reach the idle ones, and SIS_PROP's
# avg_idle must still learn from short idle periods.
# shape: 2x4
. /tests/vm/lib.sh

# busy_cpus SECS: how many CPUs were at least 60% busy over SECS seconds.
busy_cpus() {
	grep '^cpu[0-9]' /proc/stat >/tmp/stat.a
	sleep "$1"
	grep '^cpu[0-9]' /proc/stat >/tmp/stat.b
	paste -d' ' /tmp/stat.a /tmp/stat.b | awk '{
		n = NF / 2; busy = 0; all = 0
		for (i = 2; i <= n; i++) {
			d = $(n + i) - $i; all += d
			if (i != 5 && i != 6) busy += d
		}
		if (all > 0 && busy * 100 >= all * 60) c++
	} END { print c + 0 }'
}

log "work queued behind a busy CPU reaches the idle ones"
# Under none every fork stays on its parent's CPU: eight spinners forked on
# CPU 0 all queue there, and only idle CPUs pulling them spreads them.
check "loads with --policy none" start_sched /tmp/sched.log --policy none
rm -f /tmp/spin.pids
taskset -c 0 sh -c 'for i in 1 2 3 4 5 6 7 8; do
	sh -c "echo \$\$ >>/tmp/spin.pids; taskset -p ff \$\$ >/dev/null; while :; do :; done" &
done; wait' &
spinners=$!
sleep 3
n=$(busy_cpus 2)
log "CPUs at least 60% busy with 8 spinners: $n of 8"
check "every CPU runs a spinner" [ "$n" -eq 8 ]
s=$($SCHED stats --json)
pulls=$(sum $(get pull_llc "$s") $(get pull_remote "$s"))
log "pulls: $pulls"
check "idle CPUs pulled the queued spinners" [ "$pulls" -ge 7 ]
kill $(cat /tmp/spin.pids) $spinners 2>/dev/null
wait $spinners 2>/dev/null
stop_sched INT
check "exit code 0" [ "$SCHED_RC" -eq 0 ]

log "SIS_PROP's avg_idle learns from idle periods"
check "loads with --policy prop" start_sched /tmp/sched2.log --policy prop --stats 0.5 --json
sleep 2
from=$(wc -l </tmp/sched2.log.out)
# wakebench's light pattern: eight messengers pause 100 us between rounds
# and their workers sleep between messages, so CPUs go idle for well under
# a millisecond, thousands of times a second. With four, one LLC's mean
# stayed at 0.74 ms once after queued wakeups came in: some of its CPUs saw
# few of the pairs, and a CPU left alone keeps the 1 ms it starts from.
$LAB wakebench --pattern light --messengers 8 --workers 1 --seconds 3 --sleep-us 100 >/dev/null 2>&1
check "wakebench completed" [ $? -eq 0 ]
low=$(min_field "llcs.*.prop_avg_idle_ns" /tmp/sched2.log.out "$from")
log "lowest mean avg_idle under wakebench: $low ns (1000000 = the cap it starts at)"
# Without learning every CPU keeps exactly the 1 ms cap; each short period
# moves a CPU's average an eighth of the way down, so 0.8 ms takes a few
# of them on every CPU of an LLC (0.60 ms measured with eight messengers).
check "short idle periods pulled avg_idle well below its cap" [ "${low:-1000000}" -lt 800000 ]
stop_sched INT
check "exit code 0" [ "$SCHED_RC" -eq 0 ]

finish
