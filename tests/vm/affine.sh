# Wake-affine placement (2 LLCs x 4 CPUs): a pair of tasks ping-ponging
# through pipes (synchronous wakeups) starts split across the two LLCs.
# With wake-affine targets, a waker that is alone on its CPU pulls its
# wakee into its own LLC, as the kernel's wake_affine_idle() does, so the
# pair ends up sharing an LLC; with --no-wake-affine every wakeup targets
# prev, which stays idle between wakeups, and the pair stays split. New
# threads of a busy parent start in the idlest LLC, as fork balancing has it.
# shape: 2x4
. /tests/vm/lib.sh

mkfifo /tmp/ping /tmp/pong

# pair: starts the two ends on CPUs 0 and 4, then lets them go anywhere.
pair() {
	taskset -c 0 sh -c 'exec 3</tmp/ping 4>/tmp/pong; echo x >&4
		while read -r x <&3; do echo x >&4; done' &
	a=$!
	taskset -c 4 sh -c 'exec 4>/tmp/ping 3</tmp/pong
		while read -r x <&3; do echo x >&4; done' &
	b=$!
	sleep 1
	taskset -p ff $a >/dev/null
	taskset -p ff $b >/dev/null
}

# cpu PID: the CPU the task last ran on (field 39 of its stat line).
cpu() { awk '{ print $39 }' /proc/$1/stat; }

# together: how many of 40 samples (0.2 s apart) found the pair in one LLC.
together() {
	local n=0 i ca cb seen=
	for i in $(seq 40); do
		sleep 0.2
		ca=$(cpu $a)
		cb=$(cpu $b)
		[ $((ca / 4)) -eq $((cb / 4)) ] && n=$((n + 1))
		seen="$seen $ca/$cb"
	done
	echo "# CPUs:$seen" >&2
	echo $n
}

unpair() {
	kill $a $b 2>/dev/null
	wait $a $b 2>/dev/null
}

check "loads without wake-affine" start_sched /tmp/sched.log --policy util --no-wake-affine
pair
sleep 2
n=$(together)
log "without wake-affine: the pair shared an LLC in $n of 40 samples"
s=$($SCHED stats --json)
check "no wake-affine targets counted" [ "$(json_field wake_affine "$s")" -eq 0 ]
unpair
stop_sched INT
check "exit code 0" [ "$SCHED_RC" -eq 0 ]

check "loads with wake-affine" start_sched /tmp/sched.log --policy util
pair
sleep 2
n=$(together)
log "with wake-affine: the pair shared an LLC in $n of 40 samples"
check "with wake-affine the pair shares an LLC" [ "$n" -ge 36 ]
s=$($SCHED stats --json)
log "wakeups $(json_field wakeups "$s"), wake-affine $(json_field wake_affine "$s")"
check "wake-affine targets counted" [ "$(json_field wake_affine "$s")" -gt 0 ]
unpair

# hackbench's wakeups are synchronous too: how many went affine.
$SCHED reset-stats >/dev/null
hackbench -g 2 -l 300 >/tmp/hb.log 2>&1
check "hackbench completed" grep -q '^Time:' /tmp/hb.log
s=$($SCHED stats --json)
w=$(json_field wakeups "$s")
aff=$(json_field wake_affine "$s")
log "hackbench: $aff of $w wakeups targeted the waker's CPU"
check "hackbench wakeups were counted" [ "$w" -gt 1000 ]

# New tasks start where the kernel's fork balancing puts them: two threads
# forked from a busy parent go one to each LLC (filling the parent's LLC
# first kept both beside it). Each LLC is a node here, so after the fork
# a barrier's synchronous wakeup may draw a thread to the other's node, or
# a moment's load by this shell may send one there (both as the kernel
# would, and then two threads on 4 CPUs are within its NUMA allowance): of
# up to three runs, one must keep them apart.
for try in 1 2 3; do
	$SCHED reset-stats >/dev/null
	r=$($SCHED streambench --threads 2 --runs 4 --elements 262144 --json | tail -n 1)
	llcs=$(json_field llcs_used "$r")
	forks=$(json_field wake_fork "$($SCHED stats --json)")
	log "run $try: STREAM's 2 threads ran in $llcs LLCs (mean over kernels); $forks fork(s) placed by fork balancing"
	awk "BEGIN { exit !($llcs >= 1.9) }" && break
done
check "two threads started together run in both LLCs" awk "BEGIN { exit !($llcs >= 1.9) }"
check "their forks were placed by fork balancing" [ "$forks" -ge 2 ]

stop_sched INT
check "exit code 0" [ "$SCHED_RC" -eq 0 ]
finish
