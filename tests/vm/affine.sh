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
# Every wakeup targets prev, which is idle between wakeups: only a pull of
# a waiting end could bring the two together, and a ping-pong pair never
# waits behind anything. Measured: 0 of 40; a tenth is the bound.
check "without wake-affine the pair stays split (at most 4 of 40 samples together)" [ "$n" -le 4 ]
s=$($SCHED stats --json)
check "no wake-affine targets counted" [ "$(get wake_affine "$s")" -eq 0 ]
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
log "wakeups $(get wakeups "$s"), wake-affine $(get wake_affine "$s")"
check "wake-affine targets counted" [ "$(get wake_affine "$s")" -gt 0 ]
unpair

# hackbench's wakeups are synchronous too: how many went affine.
$SCHED reset-stats >/dev/null
hackbench -g 2 -l 300 >/tmp/hb.log 2>&1
check "hackbench completed" grep -q '^Time:' /tmp/hb.log
s=$($SCHED stats --json)
w=$(get wakeups "$s")
aff=$(get wake_affine "$s")
log "hackbench: $aff of $w wakeups targeted the waker's CPU"
check "hackbench wakeups were counted" [ "$w" -gt 1000 ]
# Measured: 20% (2299 of 11769). A waker alone on its CPU is common
# between hackbench's bursts; without wake-affine the count is 0 (above).
check "a share of hackbench's wakeups went affine (at least 2%)" [ $((aff * 50)) -ge "$w" ]

# New tasks start where the kernel's fork balancing puts them: of two
# threads forked from a busy parent, the first stays in the parent's LLC
# (its node runs one task, within imb_numa_nr = 2 of the idler one), and
# the second goes to the other LLC (the parent's node would run 3). Where
# each thread first ran is that decision, before a barrier's wakeup may
# draw one to the other's LLC, as the kernel's wake-affine would. The rule
# is deterministic but what it counts is not: the first thread, touching
# its arrays, may sleep on the address space's lock while the parent maps
# the second one's stack, and then the parent's node runs one task at the
# second fork, not two (one run in about 30 in CI). So all but one of RUNS
# runs must show it; a rule that kept both home, or ignored fork, shows it
# in none.
RUNS=5
split=0
forks=0
for try in $(seq $RUNS); do
	$SCHED reset-stats >/dev/null
	r=$($LAB streambench --threads 2 --runs 4 --elements 262144 --json | tail -n 1)
	f=$(get wake_fork "$($SCHED stats --json)")
	log "run $try: STREAM's 2 threads started in $(get start_llcs "$r") LLC(s), ran in $(get llcs_used "$r") (mean over kernels); $f fork(s) placed by fork balancing"
	[ "$(get start_llcs "$r")" = 2.0 ] && split=$((split + 1))
	[ "$f" -ge 2 ] && forks=$((forks + 1))
done
check "two threads forked together started in both LLCs in all runs but one at most ($split of $RUNS)" [ $split -ge 4 ]
check "their forks were placed by fork balancing ($forks of $RUNS runs)" [ $forks -eq $RUNS ]

stop_sched INT
check "exit code 0" [ "$SCHED_RC" -eq 0 ]
finish
