# Two sockets of two LLCs of two cores, a NUMA node per socket (distance
# 32, beyond node_reclaim_distance): LLC i holds CPUs 2i and 2i+1, node n
# CPUs 4n..4n+3. The scheduler must read the shape the guest has, keep
# queued work inside its node when the node has idle CPUs, even out
# running work between nodes as the kernel does, take wakees
# across LLCs of a node but not across the far socket (the kernel's
# SD_WAKE_AFFINE), and count pulls and wakeups by distance.
# shape: 2s2l2c
. /tests/vm/lib.sh

# cpu PID: the CPU the task last ran on (field 39 of its stat line).
cpu() { awk '{ print $39 }' /proc/$1/stat; }

# --- the topology, as sysfs has it and as the scheduler reads it ----------
sys=/sys/devices/system
ncpu=$(nproc)
nllc=$(cat $sys/cpu/cpu[0-9]*/cache/index3/id | sort -u | wc -l)
nnode=$(ls -d $sys/node/node[0-9]* | wc -l)
npkg=$(cat $sys/cpu/cpu[0-9]*/topology/physical_package_id | sort -u | wc -l)
log "sysfs: $ncpu CPUs, $nllc LLCs, $nnode nodes, $npkg packages; distances $(cat $sys/node/node0/distance)"
check "the guest has the shape asked for (8 CPUs, 4 LLCs, 2 nodes, 2 packages)" \
	[ "$ncpu.$nllc.$nnode.$npkg" = 8.4.2.2 ]
check "node 1 holds CPUs 4-7" [ "$(cat $sys/node/node1/cpulist)" = 4-7 ]
check "the nodes are 32 apart" [ "$(cat $sys/node/node0/distance)" = "10 32" ]

# Every check below counts tasks per node; a kdamond run in a node is one
# more (a remote pull was once counted where no spinner left its node).
quiet_damon
check "loads" start_sched /tmp/sched.log --policy util
want="$nnode nodes x $((nllc / nnode)) LLCs x $((ncpu / nllc)) CPUs, SMT off"
check "it logs the topology sysfs describes ($want)" grep -q "topology: $want" /tmp/sched.log
s=$($SCHED stats --json)
check "stats name it too" [ "$(get topology "$s")" = "$want" ]

# --- queued work stays in its node ------------------------------------------
# Three spinners start on LLC 3 (node 1, CPUs 6 and 7), one of them
# waiting, and two on CPU 0 (node 0), one waiting; then every spinner may
# run anywhere. The idle CPUs nearest to LLC 3's queue are LLC 2's, in its
# node; in index order they would be node 0's CPU 2. Node 0's waiting
# spinner has CPU 1 beside it. The counts are chosen so that nothing else
# may move a spinner: a node with 3 or fewer tasks on 4 CPUs is not
# overloaded, so no pull crosses a node (pull_from_llc()), and 3 tasks
# against 2 is a difference of one idle CPU, which spread() leaves alone,
# as the kernel's calculate_imbalance() does. This shell and what it runs
# stay on CPU 3, the fourth task of node 0 at most. So every spinner must
# be in its node, on a CPU of its own, in every sample.
taskset -p -c 3 $$ >/dev/null
$SCHED reset-stats >/dev/null
A=
B=
for i in 1 2; do
	taskset -c 0 sh -c 'while :; do :; done' &
	A="$A $!"
done
for i in 1 2 3; do
	taskset -c 6,7 sh -c 'while :; do :; done' &
	B="$B $!"
done
sleep 1
for p in $A $B; do taskset -p ff $p >/dev/null; done
sleep 2
# One reader per sample, so that the sampling itself queues little; a
# sample reads "a" or "b" (the group) and the CPU, then "shared" when two
# spinners of a sample last ran on one CPU.
files=$(for p in $A $B; do printf '/proc/%s/stat ' $p; done)
strays=0
shared=0
seen=
for i in $(seq 20); do
	sleep 0.2
	sample=$(awk '{ print (NR <= 2 ? "a" : "b") $39 } $39 in on { s = 1 } { on[$39] } END { if (s) print "shared" }' $files)
	for w in $sample; do
		seen="$seen $w"
		case $w in
		a[0-3] | b[4-7]) ;;
		shared) shared=$((shared + 1)) ;;
		*) strays=$((strays + 1)) ;;
		esac
	done
done
log "spinners' CPUs (a: started in node 0, b: in node 1):$(echo $seen | tr ' ' '\n' | sort | uniq -c | tr -s ' \n' ' ')"
check "in 20 samples, no spinner was in the other node ($strays of 100 were)" [ $strays -eq 0 ]
check "in 20 samples, each spinner had a CPU of its own ($shared samples shared one)" [ $shared -eq 0 ]
s=$($SCHED stats --json)
log "pulls: llc $(get pull_llc "$s") node $(get pull_node "$s") package $(get pull_package "$s") remote $(get pull_remote "$s") (running $(get pull_running "$s"))"
check "node 1's waiting spinner was pulled within its node" [ "$(get pull_node "$s")" -ge 1 ]
check "no pull crossed a node" [ "$(get pull_remote "$s")" -eq 0 ]
kill $A $B
wait $A $B 2>/dev/null
taskset -p ff $$ >/dev/null

# --- running work spreads to an idle node ---------------------------------
# Spinners never sleep, so no queue ever holds them and no pull sees them:
# started in node 0 and then let go, they stay there unless balancing
# moves running tasks, as the kernel's does between nodes with CPUs to
# spare. By its rule three spinners lose one to node 1 (3 idle CPUs
# against none is an imbalance of 3), and then no more: 2 to 1, like 2
# to 0, is within what adjust_numa_imbalance() allows a node running
# fewer than imb_numa_nr tasks (2 here: a node's two LLCs), and so two
# spinners stay together. This shell and what it starts stay in node 1
# meanwhile, and three spinners leave node 0 a CPU: it would take two
# extra tasks at once there to overload it, when a pull could take a
# waiting spinner across instead.
# spinners N: N spinners started in node 0 and then free; their pids in S.
spinners() {
	S=
	for i in $(seq $1); do
		taskset -c 0-3 sh -c 'while :; do :; done' &
		S="$S $!"
	done
	sleep 0.5
	for p in $S; do taskset -p ff $p >/dev/null; done
}
# in_node1: of 10 samples 0.2 s apart after 2 s, the spinners found in
# node 1, one count per sample.
in_node1() {
	sleep 2
	files=$(for p in $S; do printf '/proc/%s/stat ' $p; done)
	for i in $(seq 10); do
		sleep 0.2
		awk '$39 >= 4 { n++ } END { printf "%d ", n }' $files
	done
}

taskset -p -c 7 $$ >/dev/null
$SCHED reset-stats >/dev/null
spinners 3
counts=$(in_node1)
s=$($SCHED stats --json)
log "three spinners: in node 1 at each sample: $counts; running tasks moved: $(get pull_running "$s") (remote pulls $(get pull_remote "$s"))"
check "three spinners started in node 0: one moves to node 1, and stays" \
	[ "$(echo $counts | tr ' ' '\n' | grep -c '^1$')" -ge 8 ]
r=$(get pull_running "$s")
check "the move was counted (1 to 3 running tasks), as a remote pull too" \
	[ "$r" -ge 1 -a "$r" -le 3 -a "$(get pull_remote "$s")" -ge "$r" ]
check "the text report shows them" says "$($SCHED stats)" 'remote [0-9]+ \(running [1-9][0-9]*\)'
kill $S
wait $S 2>/dev/null

$SCHED reset-stats >/dev/null
spinners 2
counts=$(in_node1)
s=$($SCHED stats --json)
log "two spinners: in node 1 at each sample: $counts; running tasks moved: $(get pull_running "$s") (remote pulls $(get pull_remote "$s"), node pulls $(get pull_node "$s"))"
# The rule's decision is that no running task moves: a balancer without
# the allowance would move one (2 idle CPUs against 4 is an imbalance of
# 1 task), as it moved one of three above. Where the spinners then sit is
# evidence too, but weaker: in about one run in ten a spinner sat in
# node 1 from the first sample with no pull or move counted (placed there
# by a path no counter shows; the affinity change is the suspect), and 1
# to 1 is as balanced, so the balancer rightly left it. Another task
# running in node 0 for a moment (this scheduler's own thread, a kworker)
# makes an imbalance of 3 there, which the rule does act on: one move with
# both spinners still together in node 0 was such a task, not a spinner
# (a moved spinner, never sleeping, would stay in node 1).
together=$(echo $counts | tr ' ' '\n' | grep -c '^0$')
moved=$(get pull_running "$s")
check "two spinners started in node 0: no spinner moved between nodes (the imbalance the kernel allows; $moved move(s), together $together of 10)" \
	sh -c "[ '$moved' -eq 0 ] || [ '$moved' -eq 1 -a $together -ge 9 ]"
[ "$together" -ge 9 ] || log "note: one spinner sat in node 1 in $((10 - together)) of 10 samples, moved by no count above"
kill $S
wait $S 2>/dev/null
taskset -p ff $$ >/dev/null

# --- wake-affine follows distance -------------------------------------------
mkfifo /tmp/ping /tmp/pong
# pair CPU CPU: a pipe ping-pong (synchronous wakeups) started on the two
# CPUs, then free to go anywhere.
pair() {
	taskset -c $1 sh -c 'exec 3</tmp/ping 4>/tmp/pong; echo x >&4
		while read -r x <&3; do echo x >&4; done' &
	pa=$!
	taskset -c $2 sh -c 'exec 4>/tmp/ping 3</tmp/pong
		while read -r x <&3; do echo x >&4; done' &
	pb=$!
	sleep 1
	taskset -p ff $pa >/dev/null
	taskset -p ff $pb >/dev/null
	sleep 2
}
unpair() {
	kill $pa $pb 2>/dev/null
	wait $pa $pb 2>/dev/null
}
# together DIVISOR: of 40 samples 0.2 s apart, how many found the pair in
# one LLC (2) or one node (4).
together() {
	n=0
	for i in $(seq 40); do
		sleep 0.2
		[ $(($(cpu $pa) / $1)) -eq $(($(cpu $pb) / $1)) ] && n=$((n + 1))
	done
	echo $n
}

$SCHED reset-stats >/dev/null
pair 0 2
n=$(together 2)
log "split across the LLCs of node 0: the pair shared an LLC in $n of 40 samples"
s=$($SCHED stats --json)
log "wakeups $(get wakeups "$s"), queued $(get queued_wakeups "$s"), affine $(get wake_affine "$s"), moved llc $(get wake_moved_llc "$s"), pulls $(get pull_llc "$s")/$(get pull_node "$s")/$(get pull_remote "$s")"
check "within a node the waker draws its wakee into its LLC" [ "$n" -ge 20 ]
unpair

$SCHED reset-stats >/dev/null
pair 0 4
n=$(together 4)
log "split across the nodes: the pair shared a node in $n of 40 samples"
check "across the far socket each wakee stays by prev" [ "$n" -le 4 ]
s=$($SCHED stats --json)
w=$(get wakeups "$s")
mn=$(get wake_moved_node "$s")
log "$mn of $w wakeups changed node; queued $(get queued_wakeups "$s"), affine $(get wake_affine "$s"), pulls $(get pull_llc "$s")/$(get pull_node "$s")/$(get pull_remote "$s")"
check "hardly a wakeup changed node (under 5%)" [ $((mn * 20)) -lt "$w" ]
unpair

# --- the distance counters under hackbench ----------------------------------
$SCHED reset-stats >/dev/null
hackbench -g 4 -l 300 >/tmp/hb.log 2>&1
check "hackbench completed" grep -q '^Time:' /tmp/hb.log
s=$($SCHED stats --json)
w=$(get wakeups "$s")
ml=$(get wake_moved_llc "$s")
mn=$(get wake_moved_node "$s")
log "hackbench: $w wakeups, $ml to another LLC, $mn to another node"
check "wakeups were counted" [ "$w" -gt 1000 ]
# Sanity (true by how the counters are kept): a node change is an LLC
# change, and an LLC change a wakeup.
check "sanity: node changes <= LLC changes <= wakeups" within "$mn" "$ml" "$w"
check "some wakeups changed LLC" [ "$ml" -gt 0 ]
# The behaviour: a wakeup's target is prev or, within the node, the
# waker's CPU, and the scan stays in the target's LLC, so LLC changes stay
# inside the node. A rule that took the waker's CPU across the socket
# would move about half of them there. 1% allows the rare fallback path.
check "LLC changes stayed in their node ($mn of $ml crossed)" [ $((mn * 100)) -le "$ml" ]
check "no pull was counted between nodes of one package (there is none)" [ "$(get pull_package "$s")" -eq 0 ]
check "the text report shows pulls by distance" says "$($SCHED stats)" \
	'pulls llc [0-9]+ node [0-9]+ package 0 remote [0-9]+'

stop_sched INT
check "exit code 0" [ "$SCHED_RC" -eq 0 ]
finish
