# Guest side of scripts/scale.sh: what the guest has, how long the
# scheduler takes to load, what the verifier walked, a short hackbench
# under it, and a clean unload. One "key value" line per finding.
STATE=/sys/kernel/sched_ext/state
sys=/sys/devices/system

up() { cut -d' ' -f1 /proc/uptime; }
since() { echo "$(up) $1" | awk '{ printf "%.1f", $1 - $2 }'; }

echo "boot_s $(up)"
echo "cpus $(nproc)"
echo "llcs $(cat $sys/cpu/cpu[0-9]*/cache/index3/id | sort -u | wc -l)"
echo "nodes $(ls -d $sys/node/node[0-9]* | wc -l)"
echo "packages $(cat $sys/cpu/cpu[0-9]*/topology/physical_package_id | sort -u | wc -l)"
echo "distances0 $(cat $sys/node/node0/distance)"

t0=$(up)
scx_sisutil >/tmp/sched.log 2>&1 &
pid=$!
while [ "$(cat $STATE)" != enabled ]; do
	if ! kill -0 $pid 2>/dev/null; then
		echo "load failed"
		sed 's/^/#   /' /tmp/sched.log
		exit 1
	fi
	sleep 0.5
done
echo "load_s $(since "$t0")"
sed -n 's/.*\] topology: /topology /p; s/.*\] verifier: /verifier /p' /tmp/sched.log

t0=$(up)
hackbench -g 4 -l 50 >/tmp/hb.log 2>&1
echo "hackbench_s $(since "$t0") $(grep '^Time:' /tmp/hb.log)"
echo "wakeups $(scx_sisutil stats --json | grep -o '"wakeups":[0-9]*' | head -n1 | cut -d: -f2)"

t0=$(up)
kill -INT $pid
wait $pid
echo "exit $?"
echo "unload_s $(since "$t0")"
echo "state $(cat $STATE)"
