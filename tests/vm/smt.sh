# SMT (1 LLC of 2 cores x 2 threads): the scheduler sees the sibling pairs,
# keeps the kernel's idle-core hint, looks for whole idle cores at light
# load, and schedules hackbench to completion under every policy.
# shape: 1x2x2
. /tests/vm/lib.sh

check "loads" start_sched /tmp/sched.log --policy util --stats 0.5 --json
check "the topology has SMT on" grep -q "SMT on" /tmp/sched.log
sleep 2
idle=$(json_lines /tmp/sched.log.out | tail -n1)
check "one LLC of width 4" [ "$(get llcs.0.width "$idle")" = 4 ]
# Only a scan that finds no idle core clears the hint, and idle entries
# set it again. With nothing else running such a scan can still happen
# when this shell and the scheduler's statistics thread wake together on
# both cores, and a sample catches one now and then (measured: 4 of 4 samples
# set in one clean-clone run, 3 of 4 in the next); with both cores kept
# busy the hint is clear in every sample (tried: 0 of 4). So: at least 3
# of the last 4.
hints=$(json_lines /tmp/sched.log.out | tail -n 4 | $LAB get --lines 'llcs.*.has_idle_cores')
nset=$(printf '%s\n' $hints | grep -c '^1$')
log "idle-core hint in the last samples:" $hints
check "the idle-core hint is set in at least 3 of the last 4 samples while idle ($nset)" [ "$nset" -ge 3 ]

$SCHED reset-stats >/dev/null
hackbench -g 1 -f 2 -l 3000 >/tmp/hb.log 2>&1
check "light hackbench completed" grep -q '^Time:' /tmp/hb.log
s=$($SCHED stats --json)
log "core scans: $(get core_scans "$s") of $(get scans "$s"); smt: $(get wake_smt "$s")"
check "scans looked for whole idle cores" [ "$(get core_scans "$s")" -gt 0 ]

for p in $(policies); do
	check "switched to $p" switch_to $p
	hackbench -g 2 -l 300 >/tmp/hb.log 2>&1
	check "hackbench under $p completed" grep -q '^Time:' /tmp/hb.log
done
check "still enabled" [ "$(state)" = enabled ]
stop_sched INT
check "exit code 0" [ "$SCHED_RC" -eq 0 ]
finish
