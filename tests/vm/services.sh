# The review's two service workloads through the A/B harness, under util
# and EEVDF, on two nodes: STREAM (streambench) and YCSB against a real
# PostgreSQL server. Each completes with sane numbers, the server is gone
# afterwards, a server killed mid-run gives failed samples and one clear
# line instead of a hang, and a missing server fails only its own points.
# shape: 2s2l2c
# timeout: 900
. /tests/vm/lib.sh

ELEMS=262144
# busybox has no pgrep; its pidof matches the server's processes by name.
server_up() { pidof postgres >/dev/null; }
no_server() { ! server_up && ! ls -d /tmp/scx_sisutil-pg-* >/dev/null 2>&1; }
gone() { ! kill -0 "$1" 2>/dev/null; }

# values METRIC FILE: METRIC of every sample of a results file that has it.
values() { $LAB get --file "$2" "points.*.samples.*.*.values.$1"; }
# with_wall METRIC FILE: "METRIC WALL_S" of every such sample, a line each.
with_wall() {
	samples "$2" | while read -r _smp; do
		_v=$(get "values.$1" "$_smp" 2>/dev/null) || continue
		echo "$_v $(get wall_s "$_smp")"
	done
}
all_positive() { [ -n "$1" ] && echo "$1" | awk '$1 <= 0 { bad = 1 } END { exit bad }'; }

log "the standalone ycsb command starts, loads and stops its own server"
out=$($LAB ycsb --workload b --clients 2 --seconds 2 --records 1000 2>&1)
rc=$?
echo "$out" | sed 's/^/# /'
check "ycsb exits 0" [ $rc -eq 0 ]
check "ycsb reports operations per second" says "$out" '^[0-9.]+ ops/s over [0-9]+ operations'
check "no server left after ycsb" no_server

log "bench: stream and ycsb under eevdf and util"
R=/tmp/svc
$LAB bench --preset quick --arms eevdf,util --bench stream,ycsb --iterations 2 \
	--stream-elements $ELEMS --out $R >/tmp/svc.out 2>/tmp/svc.err
rc=$?
check "bench exits 0" [ $rc -eq 0 ]
[ $rc -eq 0 ] || sed 's/^/#   /' /tmp/svc.err
check "STREAM in the review's layout" grep -q "^ *Copy:  *[0-9]" /tmp/svc.out
check "where STREAM's threads ran" grep -q "where the threads ran" /tmp/svc.out
check "ycsb in the review's layout" grep -Eq "^ *util: +[0-9.]+ \(var: [0-9.]+\) +\(-?[0-9.]+%\)" /tmp/svc.out
copy=$(values Copy $R/results.json)
ops=$(values ops $R/results.json)
check "every STREAM sample has a positive rate" all_positive "$copy"
check "every ycsb sample has positive ops/s" all_positive "$ops"
check "STREAM: 2 iterations x 2 arms" [ "$(echo "$copy" | wc -l)" -eq 4 ]
check "ycsb: 2 iterations x 2 arms" [ "$(echo "$ops" | wc -l)" -eq 4 ]
# A copy moves 2 x 8 bytes an element: its best time, from its rate, fits
# in the run's wall time; ycsb's timed phase (2 s) does too.
with_wall Copy $R/results.json >/tmp/copy.wall
with_wall ops $R/results.json >/tmp/ops.wall
check "STREAM's best copy fits in its run" awk -v n=$ELEMS '
	$1 > 0 { if (16 * n / 1e6 / $1 > $2) bad = 1; seen++ } END { exit bad || seen != 4 }' /tmp/copy.wall
check "ycsb's timed phase fits in its run" awk '
	{ if ($2 < 2) bad = 1; seen++ } END { exit bad || seen != 4 }' /tmp/ops.wall
check "the threads' placement is recorded" all_positive "$(values llcs_used $R/results.json)"
check "no server left after the bench" no_server
check "sched_ext disabled afterwards" [ "$(state)" = disabled ]

log "bench: the server killed mid-run"
$LAB bench --preset quick --arms eevdf,util --bench ycsb --iterations 3 --db-secs 3 \
	--out /tmp/kill >/tmp/kill.out 2>/tmp/kill.err &
BENCH=$!
i=0
until grep -q '^\[ *1/' /tmp/kill.err || [ $i -ge 600 ]; do sleep 0.5; i=$((i + 1)); done
check "the first sample ran" grep -q '^\[ *1/' /tmp/kill.err
check "the server runs during the bench" server_up
killall -KILL postgres
i=0
while kill -0 $BENCH 2>/dev/null && [ $i -lt 600 ]; do sleep 0.5; i=$((i + 1)); done
check "the bench ended by itself" gone $BENCH
kill -KILL $BENCH 2>/dev/null
wait $BENCH
rc=$?
check "it exits non-zero" [ $rc -ne 0 ]
check "one clear line says why" grep -q "sample(s) failed.*the database server exited" /tmp/kill.err
check "the failed samples are marked in results.json" \
	says "$($LAB get --file /tmp/kill/results.json 'points.*.samples.*.*.failed')" '^the database server exited'
check "the samples before the kill kept their values" all_positive "$(values ops /tmp/kill/results.json)"
check "no server left after the kill" no_server
check "sched_ext disabled after the kill" [ "$(state)" = disabled ]

log "bench: no PostgreSQL installed; hackbench still runs"
mount -t tmpfs none /usr/lib/postgresql
# One arm: what is checked is the missing server, not a scheduler.
$LAB bench --preset quick --arms eevdf --bench hackbench,ycsb --groups 1 --iterations 1 \
	--out /tmp/none >/tmp/none.out 2>/tmp/none.err
rc=$?
umount /usr/lib/postgresql
check "it exits non-zero" [ $rc -ne 0 ]
check "one clear line says PostgreSQL is missing" grep -q "sample(s) failed.*PostgreSQL is not installed" /tmp/none.err
check "hackbench ran every sample" [ "$(values time /tmp/none/results.json | wc -l)" -eq 1 ]
check "the report marks ycsb failed" grep -q "FAILED YCSB workload A" /tmp/none.out

finish
