. /tests/vm/lib.sh
mount -t tracefs none /sys/kernel/tracing 2>/dev/null
start_sched /tmp/sched.log --policy util
taskset -p -c 7 $$ >/dev/null
S=
for i in 1 2; do taskset -c 0-3 sh -c 'while :; do :; done' & S="$S $!"; done
sleep 0.5
echo 1 > /sys/kernel/tracing/tracing_on
echo > /sys/kernel/tracing/trace
for p in $S; do taskset -p ff $p >/dev/null; done
sleep 0.3
for f in /proc/[0-9]*/stat; do awk '$3 == "R" { print $1, $2, $39 }' $f 2>/dev/null; done
sleep 3
awk '{print $39}' $(for p in $S; do printf '/proc/%s/stat ' $p; done)
echo 0 > /sys/kernel/tracing/tracing_on
grep -A12 "failed 0" /sys/kernel/tracing/trace | head -60
grep -c imb /sys/kernel/tracing/trace
kill $S
stop_sched INT
finish
