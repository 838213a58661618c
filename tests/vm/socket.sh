# The stats socket under hostile and broken clients (1 LLC x 4 CPUs):
# dozens of clients stream bytes without a newline, hold connections
# silent, send half a request, or open and close in a loop, for 20 s. The
# scheduler's memory and threads must stay flat, `stats` and `set policy`
# must still answer at once, and SIGINT must still unload it. Then control
# requests of the right shape with bad contents (wrong types, huge numbers,
# unknown fields) each get one error line and change nothing.
# shape: 1x4
# timeout: 600
. /tests/vm/lib.sh

SOCK=/var/run/scx/root/stats
RSS_LIMIT_KB=32768

field() { awk -v k="$1:" '$1 == k { print $2 }' /proc/$SCHED_PID/status; }
# now_cs: the time in centiseconds.
now_cs() { awk '{ printf "%d", $1 * 100 }' /proc/uptime; }

check "loads with --policy util" start_sched /tmp/sched.log --policy util
log "at start: RSS $(field VmRSS) kB, $(field Threads) threads"

# until SECS CMD...: runs CMD again and again for SECS seconds.
until_secs() {
	_end=$(($(now_cs) + $1 * 100))
	shift
	while [ "$(now_cs)" -lt $_end ]; do "$@" >/dev/null 2>&1; done
}

log "hostile clients for 20 s: 20 streaming, 20 silent, 4 half-sending, 4 churning"
pids=
i=0
while [ $i -lt 20 ]; do
	until_secs 20 socat -u /dev/zero UNIX-CONNECT:$SOCK &
	pids="$pids $!"
	socat -u EXEC:"sleep 22" UNIX-CONNECT:$SOCK >/dev/null 2>&1 &
	pids="$pids $!"
	i=$((i + 1))
done
i=0
while [ $i -lt 4 ]; do
	until_secs 20 sh -c "printf '{\"req\":\"sta' | socat -u - UNIX-CONNECT:$SOCK" &
	pids="$pids $!"
	until_secs 20 socat -u /dev/null UNIX-CONNECT:$SOCK &
	pids="$pids $!"
	i=$((i + 1))
done

sleep 4
max_rss=0
max_threads=0
worst_stats=0
worst_set=0
n=0
while [ $n -lt 6 ]; do
	n=$((n + 1))
	t0=$(now_cs)
	$SCHED stats --json >/tmp/s.json 2>/tmp/s.err
	rc=$?
	t1=$(now_cs)
	[ $rc -eq 0 ] || log "stats failed: $(cat /tmp/s.err)"
	[ $((t1 - t0)) -gt $worst_stats ] && worst_stats=$((t1 - t0))
	[ $rc -eq 0 ] || worst_stats=9999
	want=prop
	[ $((n % 2)) -eq 0 ] && want=util
	$SCHED set policy $want >/tmp/set.out 2>&1
	rc=$?
	t2=$(now_cs)
	[ $((t2 - t1)) -gt $worst_set ] && worst_set=$((t2 - t1))
	if [ $rc -ne 0 ] || [ "$(get policy "$($SCHED stats --json)")" != $want ]; then
		log "set policy $want did not take: $(cat /tmp/set.out)"
		worst_set=9999
	fi
	rss=$(field VmRSS)
	thr=$(field Threads)
	[ "${rss:-0}" -gt $max_rss ] && max_rss=$rss
	[ "${thr:-0}" -gt $max_threads ] && max_threads=$thr
	sleep 1
done
log "under attack: RSS up to $max_rss kB, up to $max_threads threads; stats took up to ${worst_stats}0 ms, set policy up to ${worst_set}0 ms"
check "RSS stayed below $((RSS_LIMIT_KB / 1024)) MB" [ $max_rss -gt 0 -a $max_rss -lt $RSS_LIMIT_KB ]
check "threads stayed bounded (at most 48)" [ $max_threads -gt 0 -a $max_threads -le 48 ]
check "stats answered within 5 s every time" [ $worst_stats -le 500 ]
check "set policy took effect within 5 s every time" [ $worst_set -le 500 ]
kill $pids 2>/dev/null
wait $pids 2>/dev/null
killall socat 2>/dev/null
check "still loaded" [ "$(state)" = enabled ]

log "control requests of the right shape with bad contents"
before=$($SCHED status)
send() { echo "$1" | socat -t 3 - UNIX-CONNECT:$SOCK 2>/dev/null; }
# refused REQ: sends it; counts it in total, and in bad unless the reply is
# one line with a non-zero errno.
refused() {
	total=$((total + 1))
	_out=$(send "$1")
	_lines=$(echo "$_out" | grep -c .)
	_errno=$(get errno "$_out" 2>/dev/null)
	if [ "$_lines" -ne 1 ] || [ "${_errno:-0}" -eq 0 ]; then
		bad=$((bad + 1))
		log "not refused in one line: $1 -> $_out"
	fi
}
bad=0
total=0
for req in \
	'{"req":"control","args":{"policy":7}}' \
	'{"req":"control","args":{"policy":null}}' \
	'{"req":"control","args":{"policy":"fast"}}' \
	'{"req":"control","args":{"shadow":"builtin"}}' \
	'{"req":"control","args":{"shadow":"prop,"}}' \
	'{"req":"control","args":{"shadow":true}}' \
	'{"req":"control","args":{"small_llc":"99999999999999999999"}}' \
	'{"req":"control","args":{"small_llc":1e300}}' \
	'{"req":"control","args":{"small_llc":"-1"}}' \
	'{"req":"control","args":{"colour":"red"}}' \
	'{"req":"control","args":{"policy":"prop","extra":{"a":1}}}' \
	'{"req":"stats","args":["policy","prop"]}' \
	'{"req":123,"args":{}}' \
	'{"req":"stats","args":{"target":"nowhere"}}' \
	'{"req":"restart","args":{"target":"control"}}'; do
	refused "$req"
done
# Random ones: keys and values drawn from sets of wrong ones.
keys="policy shadow small_llc target colour 0"
vals='7 -1 1e300 18446744073709551616 null true [] {} "fast" "-5" "4294967296" "" "util;prop"'
i=0
while [ $i -lt 30 ]; do
	i=$((i + 1))
	k=$(echo $keys | tr ' ' '\n' | sed -n "$((RANDOM % 6 + 1))p")
	v=$(echo "$vals" | tr ' ' '\n' | sed -n "$((RANDOM % 13 + 1))p")
	req="{\"req\":\"stats\",\"args\":{\"target\":\"control\",\"$k\":$v}}"
	[ "$k" = target ] && req="{\"req\":\"stats\",\"args\":{\"target\":$v}}"
	refused "$req"
done
log "$total bad requests, $bad not refused"
check "every bad request got one error line" [ $bad -eq 0 ]
check "nothing changed ($before)" [ "$($SCHED status)" = "$before" ]

stop_sched INT
check "SIGINT still exits 0" [ "$SCHED_RC" -eq 0 ]
finish
