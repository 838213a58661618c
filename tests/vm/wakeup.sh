# Wakeup latency at light load, with schbench's pattern (wakebench): two
# message threads, one worker each, both workers busy with their matrices
# at the same time. Every policy must wake a worker about as fast as EEVDF
# does in the same boot; the ratio is what is checked, never a number of
# microseconds, because TCG's timing is slow and noisy. Arms alternate,
# twice, and each arm's p90s are averaged.
# shape: 2x4
# timeout: 600
. /tests/vm/lib.sh

ROUNDS=2
SECS=4

# bench ARM: one wakebench run; appends its p90 to /tmp/p90.ARM.
bench() {
	_out=$($LAB wakebench --messengers 2 --workers 1 --seconds $SECS --json 2>/dev/null | grep '^{')
	_p90=$(json_field p90_us "$_out" | head -n1)
	log "$1: p90 ${_p90:-?} us, p99 $(json_field p99_us "$_out" | head -n1) us, $(json_field rps "$_out" | head -n1) requests/s"
	[ -n "$_p90" ] && echo "$_p90" >>/tmp/p90.$1
}

mean() { awk '{ s += $1; n++ } END { if (n) printf "%.1f", s / n }' "$1"; }

rm -f /tmp/p90.*
# Warm-up: the first run after boot pays for page faults and caches.
$LAB wakebench --messengers 2 --workers 1 --seconds 2 >/dev/null 2>&1
i=0
while [ $i -lt $ROUNDS ]; do
	i=$((i + 1))
	bench eevdf
	check "round $i: loads with --policy util" start_sched /tmp/sched$i.log --policy util
	bench util
	check "round $i: switched to prop" switch_to prop
	bench prop
	s=$($SCHED stats --json)
	log "round $i (prop): $(json_field wakeups "$s") wakeups, $(json_field queued_wakeups "$s") placed in enqueue"
	stop_sched INT
	check "round $i: exit code 0" [ "$SCHED_RC" -eq 0 ]
done

eevdf=$(mean /tmp/p90.eevdf)
for arm in util prop; do
	got=$(mean /tmp/p90.$arm)
	log "mean p90: $arm ${got:-?} us, eevdf ${eevdf:-?} us"
	check "$arm: every run reported" [ "$(wc -l </tmp/p90.$arm)" -eq $ROUNDS ]
	check "$arm: p90 wakeup latency within 2x of EEVDF's" \
		awk -v a="${got:-0}" -v e="${eevdf:-0}" 'BEGIN { exit !(a > 0 && e > 0 && a <= 2 * e) }'
done

finish
