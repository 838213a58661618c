# Helpers for the tests that run inside the VM (busybox sh). Each check
# prints "ok - ...", "not ok - ..." or, when it cannot run here, "skip -
# ... : why"; finish prints "N passed, N failed, N skipped" and fails the
# test if any check failed.

SCHED=scx_sisutil
LAB=sisutil-lab
STATE=/sys/kernel/sched_ext/state
CHECKS=0
FAILS=0
SKIPS=0

log() { echo "# $*"; }

pass() {
	CHECKS=$((CHECKS + 1))
	echo "ok - $*"
}

fail() {
	CHECKS=$((CHECKS + 1))
	FAILS=$((FAILS + 1))
	echo "not ok - $*"
}

# skip DESCRIPTION WHY: a check that cannot run here, and why.
skip() {
	SKIPS=$((SKIPS + 1))
	echo "skip - $1: $2"
}

# check DESCRIPTION COMMAND...: passes if the command succeeds.
check() {
	desc=$1
	shift
	if "$@"; then pass "$desc"; else fail "$desc"; fi
}

state() { cat $STATE; }

# quiet_damon: turns off the kernel's DAMON_STAT monitor, on by default in
# the guest's kernel. Its kdamond thread wakes from timers on every CPU:
# a task that comes and goes where a test counts tasks per node, and a
# partner switch of whatever task it interrupts. SIS_CURRENT's test took
# 0, 4, 0 and 0 of a ping-pong's wakeups in four windows with it on, and
# 80, 132, 72 and 258 with it off, in one boot.
quiet_damon() {
	_d=/sys/module/damon_stat/parameters/enabled
	if [ -w $_d ]; then echo N >$_d; fi
}

# wait_state STATE [SECONDS]
wait_state() {
	_want=$1
	_ticks=$((${2:-60} * 5))
	while [ "$(state)" != "$_want" ]; do
		_ticks=$((_ticks - 1))
		[ $_ticks -le 0 ] && return 1
		sleep 0.2
	done
	return 0
}

# start_sched LOG ARGS...: starts the scheduler in the background (stderr
# to LOG, stdout to LOG.out) and waits until sched_ext reports it enabled
# (BPF verification is slow under TCG). With the detailed statistics,
# which most checks read, unless ARGS say otherwise; start_default LOG
# ARGS... starts it with ARGS alone, as a user would.
start_sched() {
	_log=$1
	shift
	case " $* " in
	*" --no-scan-stats "* | *" --detail-stats "*) start_default "$_log" "$@" ;;
	*) start_default "$_log" --detail-stats "$@" ;;
	esac
}

start_default() {
	_log=$1
	shift
	# A large exit dump: if the kernel unloads the scheduler, the log says
	# which task waited and what every CPU held.
	$SCHED --exit-dump-len 262144 "$@" >"$_log.out" 2>"$_log" &
	SCHED_PID=$!
	if wait_state enabled 120; then
		# sched_ext reports the scheduler enabled a moment before its
		# statistics socket answers: a check that asks at once would
		# find no instance.
		_n=0
		until $SCHED status >/dev/null 2>&1 || [ $_n -ge 100 ]; do
			sleep 0.2
			_n=$((_n + 1))
		done
		return 0
	fi
	echo "# scheduler did not load; its output:"
	sed 's/^/#   /' "$_log"
	return 1
}

# stop_sched [SIGNAL]: stops it, SCHED_RC gets its exit status.
stop_sched() {
	kill -"${1:-INT}" "$SCHED_PID"
	wait "$SCHED_PID"
	SCHED_RC=$?
}

# switch_to POLICY: switches the running instance to POLICY; true when it
# answered with the new policy and its statistics report it.
switch_to() {
	_out=$($SCHED set policy "$1" 2>&1) || {
		echo "# set policy $1: $_out"
		return 1
	}
	says "$_out" "^policy $1," && [ "$(get policy "$($SCHED stats --json)")" = "$1" ]
}

# expect_error RC PATTERN COMMAND...: the command exits with RC and says
# one line on stderr, which matches PATTERN.
expect_error() {
	_rc=$1
	_pat=$2
	shift 2
	"$@" >/tmp/expect.out 2>/tmp/expect.err
	_got=$?
	_lines=$(wc -l </tmp/expect.err)
	if [ "$_got" -eq "$_rc" ] && [ "$_lines" -eq 1 ] && grep -q -- "$_pat" /tmp/expect.err; then
		pass "'$*' fails with one line: $(cat /tmp/expect.err)"
	else
		fail "'$*': exit $_got (want $_rc), $_lines stderr line(s), want /$_pat/:"
		sed 's/^/#   /' /tmp/expect.err
	fi
}

# policies: every policy of the scheduler, one per line, as its --policy
# takes them; a test that goes through the rules reads them here, so a
# rule added to the scheduler is tested without editing the test.
policies() {
	$LAB rules
}

# get PATH JSON: the value at PATH of the JSON document, read by the lab:
# keys and array indexes joined by dots (scans, llcs.0.found,
# rules.prop.judged, pairs.util/full.first_only, limit.0), `*` for every
# member (llcs.*.width, one per line); an array of numbers comes as words.
# A path that is not there says so on stderr and prints nothing.
get() {
	printf '%s\n' "$2" | $LAB get "$1"
}

# samples FILE: every sample of an A/B results file, a JSON object a line.
samples() {
	$LAB get --file "$1" 'points.*.samples.*.*'
}

# hist_mean COUNTS...: the mean slot of a histogram (slot i counts value i).
hist_mean() {
	echo "$*" | awk '{ n = 0; s = 0; for (i = 1; i <= NF; i++) { n += $i; s += (i - 1) * $i } printf "%.3f", n ? s / n : 0 }'
}

# sum NUMBERS...: their sum.
sum() {
	_s=0
	for _n in "$@"; do _s=$((_s + _n)); done
	echo $_s
}

# within LOW X HIGH: LOW <= X <= HIGH (integers).
within() {
	[ "$1" -le "$2" ] && [ "$2" -le "$3" ]
}

# says TEXT ERE: a line of TEXT matches ERE (for check, which cannot take
# a pipe: `check D echo X | grep` would grep check's own output).
says() {
	printf '%s\n' "$1" | grep -Eq "$2"
}

# near A B: A and B differ by at most 5% (or 20), for two counters read a
# moment apart.
near() {
	_d=$(($1 - $2))
	[ $_d -lt 0 ] && _d=$((-_d))
	[ $((_d * 20)) -le $(($1 + 400)) ]
}

# json_lines FILE [FROM]: the JSON lines of FILE after line FROM.
json_lines() {
	tail -n +$((${2:-0} + 1)) "$1" | grep '^{'
}

# min_field PATH FILE [FROM]: the smallest value at PATH in those lines.
min_field() {
	json_lines "$2" "$3" | $LAB get --lines "$1" | sort -n | head -n1
}

# perf_count EVENT FILE: the count `perf stat -x,` wrote to FILE for EVENT.
perf_count() {
	awk -F, -v e="$1" '$3 ~ e { print $1 }' "$2"
}

# all_equal VALUE WORDS...: every word equals VALUE (and there is one).
all_equal() {
	_v=$1
	shift
	[ $# -gt 0 ] || return 1
	for _w in "$@"; do [ "$_w" = "$_v" ] || return 1; done
	return 0
}

# The kernel log has no sched_ext error, stall or disable for an error, and
# no RCU stall warning.
kernel_clean() {
	if dmesg | grep -E "runnable task stall|sched_ext:.*(error|stall|invalid)|rcu.*detected stalls"; then
		return 1
	fi
	return 0
}

finish() {
	check "kernel log free of sched_ext errors and stalls" kernel_clean
	for _l in /tmp/*.log; do
		if grep -q "triggered exit" "$_l" 2>/dev/null; then
			echo "# the kernel unloaded the scheduler; from $_l:"
			grep -A80 "triggered exit" "$_l" | sed 's/^/#   /'
		fi
	done
	echo "$((CHECKS - FAILS)) passed, $FAILS failed, $SKIPS skipped"
	[ "$FAILS" -eq 0 ]
}
