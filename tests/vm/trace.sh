# Every wakeup on record (2 LLCs x 4 CPUs): `scx_sisutil trace` puts the
# running instance's wakeups into a CSV, without a reload, joined with the
# wait that followed: at full rate every placed wakeup is one row (the
# statistics' count of timed waits over the same span), rows say what the
# placement found as the statistics do, one in 64 gives about a 64th; the
# lab turns a trace into a report, a plot and a Perfetto trace (which the
# host half of this test opens with Perfetto's own schema). Bad input: a
# folder it cannot create, a full disk, a client killed mid-trace: one
# line, the scheduler keeps scheduling, and no torn file is left. A point
# of the harness keeps the trace of its last run under a +traceN arm.
# shape: 2x4
# timeout: 900
. /tests/vm/lib.sh

mkdir -p /results
# rows FILE [KIND]: data rows of a trace (with that found kind).
rows() {
	if [ -n "$2" ]; then
		awk -F, -v k="$2" 'NR > 1 && $21 == k' "$1" | wc -l
	else
		tail -n +2 "$1" | wc -l
	fi
}

check "loads with --policy util --shadow prop" start_sched /tmp/sched.log --policy util --shadow prop

# A load that leaves CPUs idle (one group of 2 senders and 2 receivers),
# so that the scheduler's own thread keeps up with the records.
log "every wakeup, beside a light hackbench"
hackbench -g 1 -f 2 -l 10000000 >/dev/null 2>&1 &
HB=$!
sleep 2
$SCHED reset-stats >/dev/null
check "trace --every 1 runs and reports" sh -c "$SCHED trace --out /tmp/trace --seconds 4 >/tmp/trace.out 2>&1"
s=$($SCHED stats --json)
cat /tmp/trace.out | sed 's/^/# /'
T=/tmp/trace/wakeups.csv
n=$(rows $T)
timed=0
for k in idle found missed none; do
	w=$(echo "$s" | grep -o '"waits":{.*' | grep -o "\"$k\":{[^}]*}" | head -n1 | grep -o '"count":[0-9]*' | cut -d: -f2)
	r=$(rows $T $k)
	log "  $k: $r rows, ${w:-0} waits counted"
	timed=$((timed + ${w:-0}))
done
dropped=$(sed -n 's/.*, \([0-9]*\) dropped.*/\1/p' /tmp/trace.out)
unread=$(sed -n 's/.*, \([0-9]*\) unread.*/\1/p' /tmp/trace.out)
lost=$((${dropped:-0} + ${unread:-0}))
log "rows $n, dropped ${dropped:-?}, unread ${unread:-?}, waits the statistics timed over the same span $timed"
check "wakeups.csv has its header and rows" [ "$(head -n1 $T | cut -d, -f1-3)" = "woke_ns,wait_us,waker_pid" -a "$n" -gt 1000 ]
check "the client's count is the file's" grep -q "^$n wakeups on record" /tmp/trace.out
# The statistics' count covers the reset to the stats read, a little
# longer than the trace: rows (and the records lost, dropped by a full
# ring or left unread) at most that, at least 80 %.
check "every wakeup is one row ($n + $lost lost of $timed)" \
	[ $((n + lost)) -le "$timed" -a $(((n + lost) * 10)) -ge $((timed * 8)) ]
check "every row names what its placement found" \
	[ "$(awk -F, 'NR > 1 && $21 !~ /^(idle|found|missed|none|current)$/' $T | wc -l)" -eq 0 ]
check "every scan's row has prop's verdict from the shadow" \
	[ "$(awk -F, 'NR > 1 && $21 ~ /^(found|missed|none)$/ && $25 == ""' $T | wc -l)" -eq 0 ]
check "a wait is never negative and a first run has its CPU" \
	[ "$(awk -F, 'NR > 1 && ($2 < 0 || $16 < 0)' $T | wc -l)" -eq 0 ]
check "llcs.csv has both LLCs" [ "$(awk -F, 'NR > 1 { print $2 }' /tmp/trace/llcs.csv | sort -u | wc -l)" -eq 2 ]

# Saturated (2 groups of 20 on 8 CPUs), the thread that writes the rows
# waits in the queues it schedules and falls behind: the trace still ends
# on time, and what it could not write is counted, not lost silently.
kill $HB
wait $HB 2>/dev/null
hackbench -g 2 -l 100000 >/dev/null 2>&1 &
HB=$!
sleep 2
log "every wakeup, beside a saturating hackbench"
$SCHED reset-stats >/dev/null
t0=$(date +%s)
check "trace --every 1 under saturation runs and reports" sh -c "$SCHED trace --out /tmp/sat --seconds 3 >/tmp/sat.out 2>&1"
took=$(($(date +%s) - t0))
s=$($SCHED stats --json)
sed 's/^/# /' /tmp/sat.out
w=$(json_field wakeups "$s" | head -n1)
n=$(rows /tmp/sat/wakeups.csv)
lost=$(($(sed -n 's/.*, \([0-9]*\) dropped.*/\1/p' /tmp/sat.out) + $(sed -n 's/.*, \([0-9]*\) unread.*/\1/p' /tmp/sat.out)))
check "it ended in time (${took} s for a 3 s trace, 5 s to read the rest)" [ "$took" -le 15 ]
check "rows and records lost at most the wakeups ($n + $lost of $w)" [ $((n + lost)) -le "$w" -a "$n" -gt 0 ]

kill $HB
wait $HB 2>/dev/null
hackbench -g 1 -f 2 -l 10000000 >/dev/null 2>&1 &
HB=$!
sleep 1

log "one in 64, beside the light hackbench"
$SCHED reset-stats >/dev/null
$SCHED trace --out /results/trace --every 64 --seconds 3 >/tmp/t64.out 2>&1
s=$($SCHED stats --json)
w=$(json_field wakeups "$s" | head -n1)
n64=$(rows /results/trace/wakeups.csv)
log "$n64 rows of $w wakeups"
check "about one wakeup in 64 on record ($n64 of $w)" [ $((n64 * 128)) -ge "$w" -a $((n64 * 32)) -le "$w" ]

log "the lab's report"
check "trace-report writes its report, plot and Perfetto trace" \
	sh -c "$LAB trace-report /tmp/trace >/tmp/report.out 2>&1"
sed -n '1,12p' /tmp/report.out | sed 's/^/# /'
# The report's count of util's wakeups of each kind is the file's, and
# its percentiles climb.
for k in idle found missed none; do
	c=$(awk -F, -v k=$k 'NR > 1 && $17 == "util" && $21 == k' /tmp/trace/wakeups.csv | wc -l)
	r=$(awk -v k=$k '$1 == "util" && $2 == k { print $3 }' /tmp/report.out)
	check "the report's util $k wakeups are the file's ($r of $c)" [ "${r:-0}" -eq "$c" ]
done
check "the report's percentiles climb: p50 <= p90 <= p99 <= max" \
	[ "$(awk '$1 == "util" && NF == 7 && !($4 <= $5 && $5 <= $6 && $6 <= $7)' /tmp/report.out | wc -l)" -eq 0 ]
check "and the plot and the trace exist" [ -s /tmp/trace/waits.svg -a -s /tmp/trace/trace.pftrace ]
# The one-in-64 trace goes out to the host half, which opens its Perfetto
# trace with Perfetto's own schema.
check "trace-report of the one-in-64 trace" sh -c "$LAB trace-report /results/trace >/dev/null 2>&1"
expect_error 1 "no wakeup on record\|cannot read" $LAB trace-report /tmp/nothing

log "bad input"
expect_error 1 "cannot create /proc/nope" $SCHED trace --out /proc/nope/t --seconds 1
mkdir -p /tmp/full
mount -t tmpfs -o size=64k tmpfs /tmp/full
expect_error 1 "ended early: cannot write .*No space left" $SCHED trace --out /tmp/full/t --seconds 5
check "the full disk's files were removed, not left torn" [ ! -e /tmp/full/t/wakeups.csv ]
umount /tmp/full
$SCHED trace --out /tmp/killed --seconds 3 >/dev/null 2>&1 &
CL=$!
sleep 1
kill -9 $CL
wait $CL 2>/dev/null
sleep 4
check "a killed client's trace ended by itself" grep -q "trace into /tmp/killed: [0-9]* wakeups on record" /tmp/sched.log
check "and its file is whole: every row has every column" \
	[ "$(awk -F, 'NF != 27 && !/"/' /tmp/killed/wakeups.csv | wc -l)" -eq 0 ]
expect_error 1 "already running" sh -c "$SCHED trace --out /tmp/a --seconds 3 & sleep 1; $SCHED trace --out /tmp/b --seconds 1; r=\$?; wait; exit \$r"

kill $HB
wait $HB 2>/dev/null
hackbench -g 1 -l 100 >/tmp/hb.log 2>&1
check "the scheduler kept scheduling through it all" grep -q '^Time:' /tmp/hb.log
stop_sched INT
check "exit code 0" [ "$SCHED_RC" -eq 0 ]

# A point of the harness carries a trace: a +traceN arm puts its measured
# runs on record, keeps each point's last one beside the results, with the
# lab's report of it, and the harness's report says where.
log "a harness point keeps its trace"
check "bench with a util+trace8 arm runs" sh -c "$LAB bench --preset quick --arms util,util+trace8 \
	--bench hackbench --groups 2 --modes process --ipc pipe --iterations 2 --out /tmp/abt >/tmp/abt.out 2>&1"
tail -n 5 /tmp/abt.out | sed 's/^/# /'
D=/tmp/abt/traces/hackbench-process-pipe-2-groups/util-trace8
n8=$(rows $D/wakeups.csv)
check "the point's trace is kept with its report, plot and Perfetto trace" \
	[ "$n8" -gt 0 -a -s $D/report.txt -a -s $D/waits.svg -a -s $D/trace.pftrace ]
kept=$(awk '$NF ~ /util-trace8$/ { print $(NF-3) }' /tmp/abt/report.txt)
check "the harness's report lists it with the file's rows ($kept, $n8)" [ "${kept:-0}" -eq "$n8" ]
# The scan table's wakeups are the mean of the arm's runs; the trace is
# the last run's, one wakeup in 8.
w8=$(awk '$1 == "2-groups" && $2 == "util+trace8" { print $3; exit }' /tmp/abt/report.txt)
log "trace of $n8 rows, $w8 wakeups a run"
check "about one wakeup in 8 of a run ($n8 of ${w8:-?})" [ $((n8 * 32)) -ge "${w8:-0}" -a $((n8 * 2)) -le "${w8:-0}" ]
check "the untraced arm kept none" [ ! -e /tmp/abt/traces/hackbench-process-pipe-2-groups/util ]
check "the harness plots the waits by what the scan found" grep -q "util+trace8 p99" /tmp/abt/plots/hackbench-process-pipe-waits.svg
finish
