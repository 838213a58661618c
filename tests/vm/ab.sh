# The A/B harness end to end (2 LLCs x 4 CPUs), sized for CI: a quick run
# of 2 arms x 2 iterations produces the review-style table, a results file
# whose every sample is a real measurement, and plots; the kernel's own
# SIS_UTIL arm is restored afterwards, and an interrupted run keeps what it
# measured and leaves nothing loaded; a peer scheduler that fails is left
# out of the rest of the run instead of ending it.
# shape: 2x4
. /tests/vm/lib.sh

R=/tmp/ab
$LAB bench --preset quick --arms eevdf,util --out $R >/tmp/ab.out 2>/tmp/ab.err
rc=$?
tail -n 30 /tmp/ab.out
check "bench exits 0" [ $rc -eq 0 ]
check "nothing left loaded" [ "$(state)" = disabled ]

log "the table"
check "a hackbench section" grep -q "hackbench process pipe: time (s), lower is better" /tmp/ab.out
check "a tbench section" grep -q "tbench: throughput (MB/s), higher is better" /tmp/ab.out
check "the header names both arms" grep -Eq "Test: +eevdf +util" /tmp/ab.out
check "one row per point with the baseline at 0.00 pct" \
	[ "$(grep -Ec '^ *(1|2)-groups: .*\(0\.00 pct\)' /tmp/ab.out)" -eq 2 ]
check "the method is stated" grep -q "Welch's t-test at p < 0.05" /tmp/ab.out
check "scan statistics for util" grep -Eq "^ *1-groups +util " /tmp/ab.out
check "and for the kernel, observed" grep -Eq "^ *1-groups +eevdf " /tmp/ab.out
check "progress was shown" grep -q "\[  12/12\]" /tmp/ab.err
check "report.txt holds the table" grep -q "Test:" $R/report.txt

log "the results file"
J=$R/results.json
check "results.json exists" [ -s $J ]
check "its format is named" [ "$($LAB get --file $J format)" = scx_sisutil-ab/1 ]
check "it records the kernel" [ "$($LAB get --file $J env.kernel)" = "$(uname -r)" ]
check "it records the topology" says "$($LAB get --file $J env.topology)" '^2 nodes x 1 LLC x 4 CPUs'
check "3 points x 2 iterations x 2 arms = 12 samples" [ "$(samples $J | wc -l)" -eq 12 ]
check "every sample carries the counters" \
	[ "$($LAB get --file $J 'points.*.samples.*.*.stats.wakeups' | wc -l)" -eq 12 ]
check "eevdf's are the kernel's, from the observer" \
	[ "$($LAB get --file $J 'points.*.samples.*.*.stats.policy' | grep -c '^kernel$')" -eq 6 ]
# Every measurement is positive, not all equal, and a time no longer than
# the process that reported it ran.
samples $J | while read -r smp; do
	if v=$(get values.time "$smp" 2>/dev/null); then
		echo "$v $(get wall_s "$smp") time"
	else
		echo "$(get values.throughput "$smp") $(get wall_s "$smp") rate"
	fi
done | awk '{ n++; if ($1 <= 0 || ($3 == "time" && $1 > $2)) bad++; seen[$1] = 1 }
END { d = 0; for (k in seen) d++; exit !(n == 12 && bad == 0 && d > 6) }'
check "every sample is a real, distinct measurement within its run's wall time" [ $? -eq 0 ]

log "plots"
n=$(ls $R/plots/*.svg 2>/dev/null | wc -l)
check "plots were written ($n)" [ "$n" -ge 3 ]
check "the hackbench chart is a complete SVG" grep -q "</svg>" $R/plots/hackbench-process-pipe.svg
check "the depth histogram is there" [ -s $R/plots/hackbench-process-pipe-searched.svg ]
check "plot re-reads the file" sh -c "$LAB plot $J --out /tmp/replot >/dev/null"
check "compare reads two files" sh -c "$LAB compare $J $J | grep -q 'pct: change from A to B'"
expect_error 1 "not a scx_sisutil results file" $LAB compare /etc/passwd $J
# The real schbench is optional (no package has it): without it, one line.
expect_error 1 "schbench is not installed" $LAB bench --arms eevdf,util --bench schbench --out /tmp/ab-sch

log "the kernel's SIS_UTIL arm"
F=/sys/kernel/debug/sched/features
before=$(grep -o '[A-Z_]*SIS_UTIL' $F)
check "debugfs shows the kernel's SIS_UTIL on ($before)" [ "$before" = SIS_UTIL ]
# features_during ARMS: runs one hackbench point under ARMS while sampling
# the kernel's features every 50 ms; prints the harness's exit status and
# whether NO_SIS_UTIL was ever seen.
features_during() {
	rm -f /tmp/ab2.seen
	(while :; do
		grep -qw NO_SIS_UTIL $F && : >/tmp/ab2.seen
		sleep 0.05
	done) >/dev/null 2>&1 &
	_poll=$!
	$LAB bench --preset quick --arms "$1" --bench hackbench --groups 1 \
		--iterations 1 --out /tmp/ab2 >/tmp/ab2.out 2>&1
	_rc=$?
	kill $_poll
	wait $_poll 2>/dev/null
	[ -e /tmp/ab2.seen ] && echo "rc=$_rc off" || echo "rc=$_rc on"
}
r=$(features_during eevdf-nosisutil,eevdf)
check "the eevdf-nosisutil arm ran with the kernel's SIS_UTIL off ($r)" [ "$r" = "rc=0 off" ]
check "SIS_UTIL is on again afterwards" [ "$(grep -o '[A-Z_]*SIS_UTIL' $F)" = SIS_UTIL ]
# The same sampling sees no change under the plain eevdf arm.
r=$(features_during eevdf)
check "the eevdf arm ran with it on ($r)" [ "$r" = "rc=0 on" ]

log "the arms' order"
# arm_order GROUPS [ORDER]: the arms of a 3-arm, 2-iteration run of the
# hackbench points GROUPS in the order they ran, from the progress lines.
arm_order() {
	$LAB bench --preset quick --arms util,prop,full --bench hackbench --groups $1 \
		--iterations 2 ${2:+--order $2} --out /tmp/ab-order >/dev/null 2>/tmp/ab-order.err &&
		sed -n 's/.*iteration [0-9]*\/2, \([a-z]*\):.*/\1/p' /tmp/ab-order.err | tr '\n' ' '
}
# Balanced (the default): the second round begins with the second arm,
# and the second point starts the design afresh (a design that ran on
# across points began it with full); alternating: the second round
# begins with the arm that ended the first (one point is enough to see it;
# the unit tests follow the design over several).
o=$(arm_order 1,2)
check "by default the second round is shifted, and each point starts afresh ($o)" \
	[ "$o" = "util prop full prop full util util prop full prop full util " ]
check "the results file says so" [ "$($LAB get --file /tmp/ab-order/results.json method.order)" = balanced ]
check "and that the order restarts at every point" \
	[ "$($LAB get --file /tmp/ab-order/results.json method.order_per_point)" = true ]
# 2 rounds of 3 arms are a third of the design's cycle of 6: the run
# warns, and the report says what the order did not balance.
check "the run warns that 2 rounds cannot balance 3 arms" grep -q "a multiple of 6 balances it" /tmp/ab-order.err
check "the report says so too" grep -q "not balanced at a point: its 2 round(s) are the first 2 of the design's 6" /tmp/ab-order/report.txt
check "the results file records the build" says "$($LAB get --file /tmp/ab-order/results.json env.commit)" '^g[0-9a-f]{12}$'
o=$(arm_order 1 alternate)
check "--order alternate reverses it ($o)" [ "$o" = "util prop full full prop util " ]
check "the report states the order" grep -q "in alternating order" /tmp/ab-order/report.txt

# The harness runs beside what it measures: while a benchmark runs it waits
# for the benchmark's exit instead of polling it (a 20 ms poll made about
# 230 context switches in 5 s; a waiting harness wakes only to check its
# timeout, 4 times a second).
log "the harness is quiet during a run"
$LAB bench --preset quick --arms eevdf --bench tbench --clients 4 --tbench-secs 12 \
	--iterations 1 --out /tmp/ab4 >/tmp/ab4.out 2>&1 &
b=$!
sleep 4
perf stat -i -x, -e context-switches -t $b -- sleep 5 2>/tmp/ab4.csv
cat /tmp/ab4.csv
wait $b
check "the quiet run completed" [ $? -eq 0 ]
cs=$(perf_count context-switches /tmp/ab4.csv)
check "at most 60 context switches of the harness in 5 s ($cs)" [ "${cs:-9999}" -le 60 ]

log "a failing peer is dropped, the rest of the run goes on"
# One peer never loads; the other loads, then unloads 3 s later, in the
# middle of a 6 s tbench run, and leaves its shell behind.
cat >/tmp/fading.sh <<EOF
$SCHED --policy util >/tmp/fading.log 2>&1 &
p=\$!
while [ "\$(cat $STATE)" != enabled ]; do sleep 0.1; done
sleep 3
kill -INT \$p
wait \$p
exec sleep 600
EOF
$LAB bench --preset quick --arms eevdf --arm nope='exit 3' --arm fading='sh /tmp/fading.sh' \
	--bench tbench --clients 2 --tbench-secs 6 --iterations 1 --out /tmp/ab5 >/tmp/ab5.out 2>/tmp/ab5.err
rc=$?
grep -E "DROPPED|dropping" /tmp/ab5.out /tmp/ab5.err
check "the run with failing peers exits 0" [ $rc -eq 0 ]
check "the report names the peer that never loaded" grep -q "DROPPED nope .*exited" /tmp/ab5.out
check "and the one that unloaded during a run" grep -q "DROPPED fading .*no longer loaded" /tmp/ab5.out
check "both are in the results file" \
	[ "$($LAB get --keys --file /tmp/ab5/results.json dropped)" = "fading nope" ]
check "eevdf has its sample" [ "$($LAB get --file /tmp/ab5/results.json 'points.*.samples.eevdf.*' | wc -l)" -eq 1 ]
check "and the dropped peers none" [ "$(samples /tmp/ab5/results.json | wc -l)" -eq 1 ]
check "nothing left loaded after the dropped peers" [ "$(state)" = disabled ]
left=$(for c in /proc/[0-9]*/cmdline; do tr '\0' ' ' <"$c" 2>/dev/null; echo; done | grep -c "^sleep 600")
check "the dropped peer's processes are gone ($left left)" [ "$left" -eq 0 ]

log "interrupted"
# The progress file exists before the run starts: counting lines of a file
# the background job has not yet opened made the wait end at once, and a
# SIGINT sent before the harness takes it over is ignored, as it is for
# every background job of a script, so the run went on to the end.
: >/tmp/ab3.err
$LAB bench --preset quick --arms eevdf,util --iterations 5 --out /tmp/ab3 >/tmp/ab3.out 2>/tmp/ab3.err &
b=$!
n=0
while [ "$(grep -c '^\[ *[0-9]*/' /tmp/ab3.err)" -lt 3 ] && [ $n -lt 600 ]; do
	sleep 0.2
	n=$((n + 1))
done
kill -INT $b
wait $b
rc=$?
check "an interrupted run exits non-zero" [ $rc -ne 0 ]
check "it says so in the results" says "$($LAB get --file /tmp/ab3/results.json incomplete)" interrupted
check "what it measured is kept" [ "$(samples /tmp/ab3/results.json | wc -l)" -ge 3 ]
tail -n 3 /tmp/ab3.err
check "nothing left loaded" wait_state disabled 30

finish
