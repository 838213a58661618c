# SIS_CURRENT (1 LLC of 8 CPUs): with the LLC busy (five spinners, SIS_UTIL's
# depth under 60 % of it), a pipe ping-pong's wakee, short and woken by
# its only partner, goes to its waker's CPU instead of a scan; with the
# option off nothing does. hackbench's wakers wake many tasks, and their
# wakees scan as before. It switches at run time and combines with prop.
#
# Under TCG every run takes ten times longer or more than on hardware, so
# the test raises the kernel's migration cost, the bound of a short run,
# from 500 us to 4 ms, as a user tunes it; it turns the kernel's memory
# access monitor off (quiet_damon); and it keeps its shell, the scheduler and
# the spinners off the pair's CPUs, where their timers' wakeups from
# interrupts would count as partner switches of the task they interrupt.
# shape: 1x8
. /tests/vm/lib.sh

SPINS=
spin() {
	taskset -c "$1" sh -c 'while :; do :; done' &
	SPINS="$SPINS $!"
}

# pingpong: a pipe ping-pong on CPUs 6 and 7 over 4 s, after 4 s to settle
# (wakee_flips decays to 0 within two seconds of faithful ping-pong);
# echoes the cut count, the idle CPUs left, the scans (the wakeups that
# reached the scan step and were not cut) and the sis_current flag.
pingpong() {
	taskset -c 6,7 perf bench sched pipe -l 100000000 >/dev/null 2>&1 &
	_pp=$!
	sleep 4
	$SCHED reset-stats >/dev/null
	sleep 4
	_s=$($SCHED stats --json)
	kill $_pp
	wait $_pp 2>/dev/null
	echo "$(get current_cut "$_s") $(get current_idle_left "$_s") $(get scans "$_s") $(get sis_current "$_s")"
}

# pingpong_on LABEL: pingpong with the rule on, up to five times while it
# takes fewer than 30 wakeups; echoes the last run's fields. Interrupts'
# wakeups on the pair's CPUs count as partner switches of the task they
# interrupt (the kernel's record_wakee() does the same), and in some runs
# keep wakee_flips above 0 for the whole window: 0 cuts in 4 s under both
# policies in one run, hundreds in the next. With the option off every
# window gives 0, so a retry cannot hide a rule that never applies.
pingpong_on() {
	_label=$1
	for _try in 1 2 3 4 5; do
		set -- $(pingpong)
		log "$_label, window $_try: $1 wakeups to the waker's CPU ($2 with an idle CPU left), $3 scans" >&2
		[ "$1" -ge 30 ] && break
	done
	echo "$@"
}

echo 4000000 >/sys/kernel/debug/sched/migration_cost_ns
quiet_damon
# This shell, and so the scheduler and every command it starts, stays on
# CPU 0; the spinners and the pair are placed explicitly.
taskset -p -c 0 $$ >/dev/null
# Loaded before the spinners start: under TCG five spinning vCPUs leave
# the host's cores little for the verifier's run on CPU 0.
check "loads with --policy util --sis-current" start_sched /tmp/sched.log --policy util --sis-current
for c in 1 2 3 4 5; do spin $c; done
check "it read the kernel's migration cost" grep -q "migration cost is 4000000 ns" /tmp/sched.log
check "status says it is on" says "$($SCHED status)" 'sis-current on'
set -- $(pingpong_on "ping-pong, on")
check "the statistics say it is on" [ "$4" = 1 ]
# Most wakeups find prev idle (the pair alternates between two CPUs). Of
# those that reach the scan step, the rule takes as many as the partner
# switches that interrupts still add let it: rcu_preempt's wakeups from
# softirqs on the pair's CPUs count as the interrupted task's, and keep
# wakee_flips at 1 to 10 for seconds in some runs (measured: 0 to 741 cuts
# in 4 s). The rule must work under each policy: each is given up to five
# windows, and each must reach 30 in one of them.
check "under util, the pair's wakees went to their waker's CPU: 30 in one of up to five windows (the last: $1)" [ "$1" -ge 30 ]
on_util=$1
check "the text report shows it" says "$($SCHED stats)" 'SIS_CURRENT: [0-9]+ wakeups went to their waker'

$SCHED reset-stats >/dev/null
taskset -c 0-7 hackbench -g 1 -l 300 >/tmp/hb.log 2>&1
s=$($SCHED stats --json)
cut=$(get current_cut "$s")
w=$(get wakeups "$s")
log "hackbench, on: $cut of $w wakeups to the waker's CPU"
check "hackbench completed" grep -q '^Time:' /tmp/hb.log
check "hackbench's one-to-many wakeups are left to the scan ($cut of $w)" [ $((cut * 20)) -le "$w" ]

check "switches it off" sh -c "$SCHED set sis-current off | grep -qv 'sis-current on'"
set -- $(pingpong)
log "ping-pong, off: $1 to the waker's CPU, $3 scans"
check "off, no wakeup goes to the waker's CPU by the rule" [ "$1.$4" = 0.0 ]

check "on again, under prop" sh -c "$SCHED set policy prop >/dev/null && $SCHED set sis-current on | grep -q 'policy prop.*sis-current on'"
set -- $(pingpong_on "ping-pong under prop")
log "the rule took $on_util wakeups under util and $1 under prop"
check "the statistics say it is on under prop" [ "$4" = 1 ]
check "under prop, the pair's wakees went to their waker's CPU: 30 in one of up to five windows (the last: $1)" [ "$1" -ge 30 ]
expect_error 2 "expected on or off" $SCHED set sis-current maybe
stop_sched INT
check "exit code 0" [ "$SCHED_RC" -eq 0 ]
kill $SPINS 2>/dev/null
echo 500000 >/sys/kernel/debug/sched/migration_cost_ns
finish
