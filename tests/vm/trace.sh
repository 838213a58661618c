# Every wakeup on record (2 LLCs x 4 CPUs): `scx_sisutil trace` puts the
# running instance's wakeups into a CSV, without a reload, joined with the
# wait that followed: at full rate every placed wakeup is one row (the
# statistics' count of timed waits over the same span), rows say what the
# placement found as the statistics do, llcs.csv has every LLC's state
# every interval; one in N puts each CPU's N-th wakeup on record, a 64th
# (and an 8th in a harness run) within what a counter per CPU allows; the
# lab turns a trace into a report, a plot and a Perfetto trace (which the
# host half of this test opens with Perfetto's own schema). Bad input: a
# folder it cannot create, a read-only one, a full disk, a folder holding
# a trace, a client killed mid-trace: one line, the scheduler keeps
# scheduling, and no torn file is left: on the full disk and the read-only
# folder none at all, from the killed client a whole one; a trace at its
# size cap stops early, whole, and says so. A point of
# the harness keeps the trace of its last run under a +traceN arm.
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

# columns CSV: how many columns its header names.
columns() { head -1 "$1" | awk -F, '{ print NF }'; }

# whole_csv FILE FIELDS: FILE is there, has a header and rows, ends with
# its last line whole (a newline), and every record has FIELDS fields,
# counted as CSV counts them: a quoted field may hold commas, doubled
# quotes and newlines (a task's name may hold any of them).
whole_csv() {
	[ -s "$1" ] && [ "$(tail -c 1 "$1" | od -An -c | tr -d ' ')" = '\n' ] &&
		awk -v want="$2" '
		{
			rec = pending ? rec "\n" $0 : $0
			if (gsub(/"/, "\"", rec) % 2) { pending = 1; next }
			pending = 0
			n = 1
			if (index(rec, "\"")) {
				q = 0
				for (i = 1; i <= length(rec); i++) {
					c = substr(rec, i, 1)
					if (c == "\"") q = !q
					else if (c == "," && !q) n++
				}
			} else {
				n = split(rec, f, ",")
			}
			recs++
			if (n != want) bad++
		}
		END { exit !(recs >= 2 && !pending && !bad) }' "$1"
}

# traced_samples RESULTS: per sample of an A/B results file that carries a
# trace, the scheduler's counts over the run (wakeups, queued wakeups),
# the trace's one-in-N and what it put on record (rows, dropped, unread).
traced_samples() {
	samples "$1" | while read -r _smp; do
		get trace "$_smp" >/dev/null 2>&1 || continue
		for _p in stats.wakeups stats.queued_wakeups trace.every trace.records trace.dropped trace.unread; do
			printf '%s ' "$(get $_p "$_smp")"
		done
		echo
	done
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
	w=$(get "waits.$k.count" "$s" 2>/dev/null)
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
# llcs.csv holds a row per LLC for every interval of the scheduler's
# loop (16 ms) the trace ran: both LLCs, LLC 0 then 1 at the same time,
# times in order, each of 4 CPUs with SIS_UTIL's depth within that width,
# a utilisation between 0 and 100 % and no rule of auto's (util runs).
# Its span is the trace's 4 s, less the intervals the loop was late for.
L=/tmp/trace/llcs.csv
per=$(awk -F, 'NR > 1 { n[$2]++ } END { print n[0] + 0, n[1] + 0 }' $L)
span=$(awk -F, 'NR == 2 { a = $1 } NR > 1 { b = $1 } END { printf "%d", (b - a) / 1e6 }' $L)
log "llcs.csv: rows of LLC 0 and 1: $per, over $span ms; first $(sed -n 2p $L)"
check "llcs.csv has its header" [ "$(head -n1 $L)" = "t_ns,llc,width,util_pct,nr_idle_scan,auto_rule" ]
check "llcs.csv has both LLCs of 4 CPUs in every interval, in time order, their depths and utilisations in range" \
	awk -F, 'NR == 1 { next }
		{ i = (NR - 2) % 2 }
		$2 != i || $3 != 4 || $5 > $3 || $4 < 0 || $4 > 100 || $6 != "" || NF != 6 { bad++ }
		i == 1 && $1 != t { bad++ }
		i == 0 && $1 < t { bad++ }
		{ t = $1; n++ }
		END { exit !(n >= 2 && n % 2 == 0 && !bad) }' $L
check "llcs.csv spans the trace's 4 s ($span ms) at about an interval a row ($per)" \
	[ "$span" -ge 3500 -a "$span" -le 4200 -a "${per% *}" -ge $((span / 16 / 2)) -a "${per% *}" -le $((span / 16 + 2)) ]

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
w=$(get wakeups "$s")
n=$(rows /tmp/sat/wakeups.csv)
lost=$(($(sed -n 's/.*, \([0-9]*\) dropped.*/\1/p' /tmp/sat.out) + $(sed -n 's/.*, \([0-9]*\) unread.*/\1/p' /tmp/sat.out)))
check "it ended in time (${took} s for a 3 s trace, 5 s to read the rest)" [ "$took" -le 15 ]
check "rows and records lost at most the wakeups ($n + $lost of $w)" [ $((n + lost)) -le "$w" -a "$n" -gt 0 ]
# Writing every row under saturation spends the loop's share of the CPUs:
# how late it was, and how many scans derived their depth for want of a
# fresh one, are on record.
log "the loop over the saturated trace: late p99 $(get loop_late_p99_us "$s") us, max $(get loop_late_max_us "$s") us; $(get stale_depths "$s") scans derived their depth"

kill $HB
wait $HB 2>/dev/null
sleep 1

# One in N is a counter per CPU, not a draw: each CPU puts its N-th
# wakeup since the last one on record, starting from where its counter
# stood (0 to N-1). A CPU that placed W_c wakeups over the trace thus
# gives floor((k_c + W_c) / N) records, and over 8 CPUs the records R
# (rows, dropped and unread) of W wakeups have W - 8(N-1) <= N R <=
# W + 8(N-1). The statistics bracket W: it holds every wakeup they count
# between two reads taken while the trace ran (a hackbench of fixed
# length, started and ended inside it), and none beyond those they count
# between a read before it started and one after it ended (the guest is
# idle otherwise). They count some wakeups twice, though: one whose
# select_cpu found no idle CPU and that the kernel then hands to its CPU's
# wake list is placed again by enqueue, as a queued wakeup (under a
# saturating hackbench the statistics' busy placements exceeded the
# trace's by as many as 430 of 2080, about all its queued ones), so the
# lower end takes the queued ones off: W_in - Q_in - 8 * 63 <= 64 R <=
# W_out + 8 * 63. One in 32 (or 128) would put twice (half) as many on
# record.
log "one in 64, a light hackbench of fixed length inside the trace"
counts() { _s=$($SCHED stats --json); echo "$(get wakeups "$_s") $(get queued_wakeups "$_s")"; }
c0=$(counts)
$SCHED trace --out /results/trace --replace --every 64 --seconds 20 >/tmp/t64.out 2>&1 &
TR=$!
for i in $(seq 40); do
	grep -q "^tracing one wakeup in 64" /tmp/t64.out && break
	sleep 0.25
done
c1=$(counts)
hackbench -g 1 -f 2 -l 100000 >/tmp/hb64.log 2>&1
c2=$(counts)
running=$(kill -0 $TR 2>/dev/null && echo yes)
# SIGTERM (as Ctrl-C) ends the trace sooner: the client stops it and
# reports.
kill -TERM $TR
wait $TR
c3=$(counts)
sed 's/^/# /' /tmp/t64.out
n64=$(rows /results/trace/wakeups.csv)
lost64=$(($(sed -n 's/.*, \([0-9]*\) dropped.*/\1/p' /tmp/t64.out) + $(sed -n 's/.*, \([0-9]*\) unread.*/\1/p' /tmp/t64.out)))
r64=$((n64 + lost64))
win=$((${c2% *} - ${c1% *}))
qin=$((${c2#* } - ${c1#* }))
wout=$((${c3% *} - ${c0% *}))
log "$n64 rows and $lost64 lost; wakeups while the trace ran $win ($qin queued), from before it to after it $wout; hackbench $(grep '^Time' /tmp/hb64.log)"
check "the hackbench ran inside the trace ($win wakeups)" [ "$running" = yes -a "$win" -gt 3000 ]
check "one wakeup in 64 on record: $win - $qin - 504 <= 64 x $r64 <= $wout + 504" \
	[ $((64 * r64)) -ge $((win - qin - 504)) -a $((64 * r64)) -le $((wout + 504)) ]
hackbench -g 1 -f 2 -l 10000000 >/dev/null 2>&1 &
HB=$!
sleep 1

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
# The trace opens its files (the scheduler logs its start only then),
# writes rows until a write fails for want of space, and removes its
# files: the error names the file that filled the disk and says so, and
# afterwards the disk holds nothing but the trace's empty folder, so what
# filled it was the trace's and is gone. (A folder never written into
# would leave no "No space left"; files left behind, torn or not, would
# leave the disk in use.)
expect_error 1 "failed: cannot write [a-z]*\.csv in /tmp/full/t: .*No space left.*; its files were removed" \
	$SCHED trace --out /tmp/full/t --seconds 5
check "the trace had opened its files on the full disk" grep -q "on record into /tmp/full/t," /tmp/sched.log
used=$(df -k /tmp/full | awk 'NR == 2 { print $3 }')
log "the full disk after the trace holds: $(ls -A /tmp/full | tr '\n' ' ')($(ls -A /tmp/full/t | wc -l) files in t), $used KiB in use"
check "its files were removed, not left torn: only the empty folder is left, the disk's use back to 0" \
	[ "$(ls -A /tmp/full)" = t -a -z "$(ls -A /tmp/full/t)" -a "$used" = 0 ]
umount /tmp/full
# A folder it may not write: nothing is left in it, and the message says
# why. (Root passes permission bits, so a read-only file system stands for
# a folder the scheduler may not write.)
mkdir -p /tmp/ro
mount -t tmpfs -o size=64k tmpfs /tmp/ro
mkdir /tmp/ro/t
mount -o remount,ro /tmp/ro
expect_error 1 "cannot write /tmp/ro/t/wakeups.csv: Read-only file system" $SCHED trace --out /tmp/ro/t --seconds 1
check "and nothing was left in it" [ -z "$(ls -A /tmp/ro/t)" ]
umount /tmp/ro
# A folder that holds a trace: refused, the trace there untouched, unless
# told to replace it.
before=$(md5sum /tmp/trace/wakeups.csv)
expect_error 1 "/tmp/trace already holds a trace (wakeups.csv): choose another folder, or replace it (--replace)" \
	$SCHED trace --out /tmp/trace --seconds 1
check "and the trace there is untouched" [ "$(md5sum /tmp/trace/wakeups.csv)" = "$before" ]
# Its size cap: the trace stops early, its files whole, and the client says
# so, prints what it recorded, and exits 0.
hackbench -g 1 -l 100000000 >/dev/null 2>&1 &
HB=$!
check "a trace that reaches its size cap exits 0" sh -c "$SCHED trace --out /tmp/cap --max-mb 1 --seconds 30 >/tmp/cap.out 2>&1"
kill $HB
wait $HB 2>/dev/null
sed 's/^/# /' /tmp/cap.out
ncap=$(rows /tmp/cap/wakeups.csv)
check "it says it stopped early at its size cap, files whole" grep -q "stopped early, its files whole: its size cap of 1 MB" /tmp/cap.out
check "and counts its rows ($ncap)" grep -q "^$ncap wakeups on record" /tmp/cap.out
check "which fill the cap ($(wc -c </tmp/cap/wakeups.csv) bytes)" [ "$(wc -c </tmp/cap/wakeups.csv)" -ge 1048576 ]
check "and the file is whole" whole_csv /tmp/cap/wakeups.csv "$(columns /tmp/cap/wakeups.csv)"
$SCHED trace --out /tmp/killed --seconds 3 >/dev/null 2>&1 &
CL=$!
sleep 1
kill -9 $CL
wait $CL 2>/dev/null
sleep 4
check "a killed client's trace ended by itself" grep -q "trace into /tmp/killed: [0-9]* wakeups on record" /tmp/sched.log
# Whole: there, with rows, its last line ended, every record of the
# header's columns (a quoted name counted as CSV counts it), and the lab reads it
# (csv refuses a record of another length).
check "and its file is whole: rows of every column, the last one ended" whole_csv /tmp/killed/wakeups.csv "$(columns /tmp/killed/wakeups.csv)"
check "and the lab reads it whole" sh -c "$LAB trace-report /tmp/killed >/dev/null 2>&1"
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
	--bench hackbench --groups 2 --loops 200 --modes process --ipc pipe --iterations 2 --out /tmp/abt >/tmp/abt.out 2>&1"
tail -n 5 /tmp/abt.out | sed 's/^/# /'
D=/tmp/abt/traces/hackbench-process-pipe-2-groups/util-trace8
n8=$(rows $D/wakeups.csv)
check "the point's trace is kept with its report, plot and Perfetto trace" \
	[ "$n8" -gt 0 -a -s $D/report.txt -a -s $D/waits.svg -a -s $D/trace.pftrace ]
kept=$(awk '$NF ~ /util-trace8$/ { print $(NF-3) }' /tmp/abt/report.txt)
check "the harness's report lists it with the file's rows ($kept, $n8)" [ "${kept:-0}" -eq "$n8" ]
# Each traced run's own counts are in the results file: the harness
# resets the statistics, starts the trace, runs the benchmark, stops the
# trace and reads the statistics, so a run's W wakeups hold the trace's
# and the few of the harness's own requests around it. By the counter
# (above) with N = 8, less the queued wakeups Q the statistics may count
# twice (above; under this saturating hackbench nearly all of them are),
# and 5 % for the harness's requests: 0.95 (W - Q) - 8 * 7 <= 8 R <= W +
# 8 * 7 (measured at 200 loops, in 8 runs: 8 R from 1.00 to 1.07 times
# W - Q). One in 4 (or 16) would put twice (half) as many on record.
traced_samples /tmp/abt/results.json >/tmp/abt.traced
sed 's/^/# traced run: wakeups, queued, one in, rows, dropped, unread: /' /tmp/abt.traced
check "both runs of the traced arm carry their trace ($(wc -l </tmp/abt.traced))" [ "$(awk '$3 == 8' /tmp/abt.traced | wc -l)" -eq 2 ]
check "one wakeup in 8 of each run on record: 0.95 (W - Q) - 56 <= 8 R <= W + 56" \
	awk '{ r = 8 * ($4 + $5 + $6) } r > $1 + 56 || r < 0.95 * ($1 - $2) - 56 { bad++ } END { exit !(NR == 2 && !bad) }' /tmp/abt.traced
check "the untraced arm kept none" [ ! -e /tmp/abt/traces/hackbench-process-pipe-2-groups/util ]
check "the harness plots the waits by what the scan found" grep -q "util+trace8 p99" /tmp/abt/plots/hackbench-process-pipe-waits.svg
finish
