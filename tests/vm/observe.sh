# The observer (1 LLC of 8 CPUs): `scx_sisutil observe` counts the kernel's
# own placement with no sched_ext scheduler loaded. Against loads whose
# answer is known: k busy loops pinned in the LLC make the kernel's
# nr_idle_scan what SIS_UTIL's formula gives for its own sum (and that sum
# about k CPUs' worth); a busy loop on every CPU leaves no idle CPU, so no
# scan finds one and the depth is 0; an idle machine's wakeups find idle
# CPUs and their waits are timed; shadow prop is judged on every scan, its
# depth never below 4; the scans read a full LLC's utilisation, in the
# kernel's sum and in the scheduler's estimate of the same load; with
# --bpf-stats its probes' time per call is reported. Refusals: a second observer, a loaded sched_ext
# scheduler, settings sent to it. The harness runs its eevdf arm under the
# observer, its eevdf+bare arm without.
# shape: 1x8
. /tests/vm/lib.sh

OBS_LOG=/tmp/observe.log

# start_observer ARGS...: starts it in the background and waits for its socket.
start_observer() {
	$SCHED observe "$@" >"$OBS_LOG.out" 2>"$OBS_LOG" &
	OBS_PID=$!
	_t=300
	while ! $SCHED stats --json >/dev/null 2>&1; do
		_t=$((_t - 1))
		if [ $_t -le 0 ] || ! kill -0 $OBS_PID 2>/dev/null; then
			sed 's/^/#   /' "$OBS_LOG"
			return 1
		fi
		sleep 0.2
	done
}

# spin CPU...: a busy loop pinned to each CPU; SPINS gets their pids.
spin() {
	SPINS=
	for _c in "$@"; do
		taskset -c "$_c" sh -c 'while :; do :; done' &
		SPINS="$SPINS $!"
	done
}

unspin() {
	kill $SPINS 2>/dev/null
	wait $SPINS 2>/dev/null
}

# forks N CPUS: a shell kept on CPUS starting N short commands, whose
# forks and wakeups go through the kernel's placement.
forks() {
	taskset -c "$2" sh -c "i=0; while [ \$i -lt $1 ]; do /bin/true; i=\$((i + 1)); done"
}

check "observes with --shadow all --bpf-stats" start_observer --shadow all --bpf-stats
expect_error 1 "already running" $SCHED observe
check "no sched_ext scheduler was loaded by it" [ "$(state)" = disabled ]

log "k = 4 busy loops pinned to CPUs 0-3: the kernel's depth follows its sum"
spin 0 1 2 3
sleep 3
$SCHED reset-stats >/tmp/reset.out 2>&1
check "reset-stats answers as the observer" grep -q "observing the kernel" /tmp/reset.out
# Wakeups on the other half, paced so that they add little to the sum.
taskset -c 4-7 sh -c 'i=0; while [ $i -lt 200 ]; do /bin/true; sleep 0.01; i=$((i + 1)); done'
s=$($SCHED stats --json)
unspin
sum=$(get llcs.0.sum_util "$s")
nr=$(get llcs.0.nr_idle_scan "$s")
formula=$(get llcs.0.formula_nr_idle_scan "$s")
log "sum_util $sum, kernel nr_idle_scan $nr, formula on that sum $formula, limits: $(get limit "$s")"
check "the record names the kernel" [ "$(get policy "$s")" = kernel ]
check "wakeups were placed and counted" [ "$(get wakeups "$s")" -gt 100 ]
check "the LLC's sum is about 4 CPUs' worth (3600..6000)" within 3600 "$sum" 6000
check "the kernel's nr_idle_scan is the formula's for its sum, within 1" within $((formula - 1)) "$nr" $((formula + 1))
check "... and a middling depth (2..6 of 8)" within 2 "$nr" 6

log "a busy loop on every CPU: no idle CPU to find"
spin 0 1 2 3 4 5 6 7
sleep 3
$SCHED reset-stats >/dev/null
hackbench -g 1 -l 50 >/tmp/hb.log 2>&1
s=$($SCHED stats --json)
unspin
found=$(get idle_found "$s")
missed=$(get idle_missed "$s")
none=$(get no_idle "$s")
set -- $(get limit "$s")
log "scans $(get scans "$s"): found $found, missed $missed, none $none; limits: $*"
check "hackbench completed" grep -q '^Time:' /tmp/hb.log
check "scans had no idle CPU to find (>= 50)" [ "$none" -ge 50 ]
check "no scan found an idle CPU" [ "$found" -eq 0 ]
check "nor missed one" [ "$missed" -eq 0 ]
# Three in four, not more: the kernel computes the depth when it balances, and
# a balance that lands as hackbench's tasks sleep reads a lower sum (86 % of
# the scans were at 0 in one run, the rest at 1 or 2).
check "the kernel's depth was 0 at three in four scans or more" [ $(($1 * 4)) -ge $(($(get scans "$s") * 3)) ]
su=$(get llcs.0.scan_util_pct "$s")
log "the LLC's utilisation at those scans: $su %"
check "the scans read a full LLC's sum (at least 90 %)" [ "${su%%.*}" -ge 90 ]
se=$(get llcs.0.scan_est_pct "$s")
log "... in the scheduler's estimate of the same load: $se %"
check "... and so does the scheduler's estimate of it (at least 90 %)" [ "${se%%.*}" -ge 90 ]
sa=$(get llcs.0.scan_util_avg_pct "$s")
log "... from util_avg alone: $sa %"
check "... util_avg alone no more than with util_est, and most of it" \
	awk -v a="$sa" -v u="$su" 'BEGIN { exit !(a <= u + 0.001 && a >= u / 2) }'
pns=$(get ops.select_task_rq_fair_exit.ns_per_call "$s")
log "the observer's probes per call: entry $(get ops.select_task_rq_fair_entry.ns_per_call "$s") ns, exit $pns ns, switch $(get ops.sched_switch.ns_per_call "$s") ns"
check "with --bpf-stats the probes' calls are counted" [ "$(get ops.select_task_rq_fair_exit.calls "$s")" -ge "$(get wakeups "$s")" ]
check "... and timed" [ "${pns%%.*}" -gt 0 ]
plimit=$(get rules.prop.limit_mean "$s")
log "shadow prop: judged $(get rules.prop.judged "$s"), mean limit $plimit"
# The two counters are read a moment apart while the spinners' CPUs still
# wake kernel threads: near, not equal.
check "shadow prop was judged on the scans" near "$(get rules.prop.judged "$s")" "$(get scans "$s")"
check "... never below SIS_PROP's floor of 4" [ "${plimit%%.*}" -ge 4 ]

log "an idle machine: wakeups find idle CPUs, and their waits are timed"
$SCHED reset-stats >/dev/null
forks 200 0-7
i=0
while [ $i -lt 50 ]; do
	sleep 0.01
	i=$((i + 1))
done
s=$($SCHED stats --json)
idle=$(get waits.idle.count "$s" 2>/dev/null)
busy=$(get wake_busy "$s")
log "wakeups $(get wakeups "$s"), busy $busy, idle-CPU waits ${idle:-0}"
check "most wakeups went to an idle CPU" [ $((busy * 4)) -le "$(get wakeups "$s")" ]
check "their waits were timed" [ "${idle:-0}" -gt 50 ]

expect_error 1 "no settings to change" $SCHED set policy prop
kill -INT $OBS_PID
wait $OBS_PID
OBS_RC=$?
check "Ctrl-C ends it cleanly" [ "$OBS_RC" -eq 0 ]
check "and takes its socket with it" [ ! -e /var/run/scx_sisutil/observe ]

log "the harness: eevdf runs under the observer, eevdf+bare without"
$LAB bench --preset quick --arms eevdf,eevdf+bare --bench hackbench --groups 1 \
	--iterations 2 --out /tmp/obsab >/tmp/obsab.out 2>/tmp/obsab.err
check "the run completed" [ -s /tmp/obsab/results.json ]
kernel=$($LAB get --file /tmp/obsab/results.json 'points.*.samples.*.*.stats.policy' | grep -c '^kernel$')
check "each eevdf sample, and no eevdf+bare one, carries the kernel's record (2)" [ "$kernel" -eq 2 ]
check "the report gives the kernel's scan statistics" grep -q '1-groups  *eevdf  ' /tmp/obsab/report.txt
check "... and its review tables" grep -q 'kernel able to find CPU' /tmp/obsab/report.txt
check "timed only when asked (--bpf-stats)" sh -c '! grep -q select_task_rq_fair_exit /tmp/obsab/results.json'
check "the observer is gone after the run" [ ! -e /var/run/scx_sisutil/observe ]

log "with scx_sisutil loaded, the observer refuses"
if start_sched /tmp/sched.log --policy util; then
	expect_error 1 "sched_ext scheduler is loaded" $SCHED observe
	stop_sched
else
	fail "the scheduler loaded"
fi
finish
