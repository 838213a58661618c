# Guest side of scripts/cost.sh: runs every arm ROUNDS times, arms
# interleaved within each round, and prints one RESULT line per run.
#   ARMS: lines "name args..."; ROUNDS; WORKLOAD: the command to measure.
# Two words of an arm's args are this script's: bin=PATH runs another
# build of the scheduler, trace=N puts one wakeup in N on record while the
# workload runs (`scx_sisutil trace`).
STATE=/sys/kernel/sched_ext/state

wait_state() {
	n=0
	while [ "$(cat $STATE)" != "$1" ]; do
		n=$((n + 1))
		[ $n -gt 600 ] && return 1
		sleep 0.2
	done
}

# get PATH JSON: the value at PATH of the statistics (sisutil-lab get).
get() { printf '%s\n' "$2" | sisutil-lab get "$1"; }

# cpu_ns PID: CPU time of all the process's threads, in ns
cpu_ns() {
	cat /proc/$1/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f", s }'
}

r=1
while [ $r -le "$ROUNDS" ]; do
	echo "$ARMS" | while read -r name args; do
		[ -n "$name" ] || continue
		bin=scx_sisutil
		trace=
		rest=
		for w in $args; do
			case $w in
			bin=*) bin=${w#bin=} ;;
			trace=*) trace=${w#trace=} ;;
			*) rest="$rest $w" ;;
			esac
		done
		$bin $rest --bpf-stats >/tmp/sched.log 2>&1 &
		pid=$!
		wait_state enabled || { cat /tmp/sched.log; exit 1; }
		sleep 1
		scx_sisutil reset-stats >/dev/null
		if [ -n "$trace" ]; then
			scx_sisutil trace --out /tmp/cost-trace --replace --every "$trace" --seconds 100000 >/tmp/trace.log 2>&1 &
			tpid=$!
		fi
		c0=$(cpu_ns $pid)
		t0=$(cut -d' ' -f1 /proc/uptime)
		sh -c "$WORKLOAD" >/tmp/work.log 2>&1
		t1=$(cut -d' ' -f1 /proc/uptime)
		c1=$(cpu_ns $pid)
		if [ -n "$trace" ]; then
			kill -INT $tpid
			wait $tpid
			sed 's/^/# /' /tmp/trace.log
		fi
		s=$(scx_sisutil stats --json)
		rss=$(grep VmRSS /proc/$pid/status | tr -s ' ' | cut -d' ' -f2)
		elapsed=$(echo "$t1 $t0" | awk '{ print $1 - $2 }')
		cpu_pct=$(echo "$c1 $c0 $elapsed" | awk '{ printf "%.4f", 100 * ($1 - $2) / 1e9 / $3 }')
		echo "RESULT arm=$name round=$r select_cpu_ns=$(get ops.select_cpu.ns_per_call "$s") calls=$(get ops.select_cpu.calls "$s") running_ns=$(get ops.running.ns_per_call "$s") scan_ns_mean=$(get scan_ns_mean "$s") updater_cpu_pct=$cpu_pct rss_kb=$rss wall_s=$elapsed"
		kill -INT $pid
		wait $pid
		wait_state disabled
	done
	r=$((r + 1))
done
