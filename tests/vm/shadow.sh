# The shadow rules on the same wakeups (1 LLC of 8 CPUs). One look-only walk
# serves every rule, so a shallower rule finds only what a deeper one finds;
# a rule judged beside itself agrees with itself; and a shadow SIS_PROP
# keeps books of its own, charged with its own scan's time: beside itself
# its average scan cost is its own, not the active one's (and its depths
# within the bound the two costs allow), and beside a policy that never
# scans it still learns a scan cost.
# shape: 1x8
. /tests/vm/lib.sh

load() { hackbench -g 2 -l 300 >/tmp/hb.log 2>&1; }

# measure LOG ARGS...: load the scheduler with ARGS, run the load from
# fresh counters, and leave the statistics in $s.
measure() {
	_log=$1
	shift
	check "loads with $*" start_sched "$_log" "$@"
	sleep 1
	$SCHED reset-stats >/dev/null
	load
	s=$($SCHED stats --json)
}

# floor_share COUNTS...: % of a depth histogram at SIS_PROP's floor or below.
floor_share() {
	echo "$*" | awk '{ n = 0; f = 0; for (i = 1; i <= NF; i++) { n += $i; if (i <= 5) f += $i } printf "%d", n ? 100 * f / n : 0 }'
}

log "every rule beside util: one walk for all"
measure /tmp/all.log --policy util --shadow all
check "hackbench completed" grep -q '^Time:' /tmp/hb.log
scans=$(get scans "$s")
log "scans $scans; shadow rules: $(get shadow "$s")"
rules=$(get shadow "$s" | tr , ' ')
check "all is every rule that can be judged ($($LAB rules --shadow | tr '\n' ' '))" \
	[ "$rules" = "$($LAB rules --shadow | tr '\n' ' ' | sed 's/ $//')" ]
for r in $rules; do
	log "  $r: judged $(get rules.$r.judged "$s"), would find $(get rules.$r.would_find "$s"), miss $(get rules.$r.would_miss "$s"), mean limit $(get rules.$r.limit_mean "$s"), limits $(get rules.$r.limit_hist "$s")"
	check "$r was judged on every scan" [ "$(get rules.$r.judged "$s")" -eq "$scans" ]
done
check "none would never find one" [ "$(get rules.none.would_find "$s")" -eq 0 ]
check "full would have found idle CPUs" [ "$(get rules.full.would_find "$s")" -gt 0 ]
# Each pair's four cells are exact: the rules' verdicts come from one walk.
for p in util/full prop/full active/util; do
	log "  pair $p: both $(get pairs.$p.both "$s"), first only $(get pairs.$p.first_only "$s"), second only $(get pairs.$p.second_only "$s"), neither $(get pairs.$p.neither "$s")"
done
check "full finds whatever util's depth finds" [ "$(get pairs.util/full.first_only "$s")" -eq 0 ]
check "full finds whatever prop's depth finds" [ "$(get pairs.prop/full.first_only "$s")" -eq 0 ]
check "none finds nothing prop's depth misses" [ "$(get pairs.prop/none.second_only "$s")" -eq 0 ]
# The shadow util has the active util's depth on the same wakeup: only an
# idle CPU that came or went between the look and the claim can part them.
agree=$(($(get pairs.active/util.both "$s") + $(get pairs.active/util.neither "$s")))
apart=$(($(get pairs.active/util.first_only "$s") + $(get pairs.active/util.second_only "$s")))
check "the shadow util agrees with the active util on >= 90% of scans" [ $((apart * 10)) -le $((agree + apart)) ]
$SCHED stats >/tmp/all.txt
check "the text report has a row per rule" [ "$(grep -cE '^\| +(util|prop|full|none) +\| +[0-9]' /tmp/all.txt)" -eq 4 ]
check "and a depth column per rule" grep -q 'none Limit Count' /tmp/all.txt
stop_sched INT
check "exit code 0" [ "$SCHED_RC" -eq 0 ]

log "SIS_PROP beside itself, with books of its own"
# Both books see the same idle periods (every refill of the budget is the
# CPU's) and the same jiffies; they differ only in what a scan costs: the
# active book is charged with the active scan's time (it claims, an atomic
# test-and-clear per CPU), the shadow's with its share of the look-only
# walk, timed apart on the same wakeup. On this guest the two cost about
# the same and their timings are noisy (the shadow's average measured 0.34
# to 1.67 times the active's, over 9 runs), so neither the books' ratio
# nor the depths can say which book was charged with which; what the
# build that charged the shadow the active scan's time changed is that the
# two books became one: the same charges at the same moments, the same
# average scan cost to the nanosecond, the same depth on every scan (its
# depth histograms were identical in both runs of it). So the books'
# averages (means over the LLC's CPUs, read after the load) must differ.
# The depths cannot show the difference here: a busy CPU's budget ages to
# nothing within a few jiffies, so nearly every depth is SIS_PROP's floor
# of 4 (98 %), the rest the LLC's width, under both books; the mean depths
# then agree within 10 % of the books' ratio, the bound docs/policies.md
# derives, as a sanity check (at the floor both means are 4). The build
# without per-rule books refuses this pairing.
measure /tmp/self.log --policy prop --shadow prop
active=$(get limit "$s")
shadow=$(get rules.prop.limit_hist "$s")
ca=$(get scan_ns_per_cpu "$s")
cs=$(get shadow_scan_ns_per_cpu "$s")
ma=$(hist_mean $active)
ms=$(hist_mean $shadow)
ba=$(get llcs.0.prop_avg_scan_cost_ns "$s")
bs=$(get llcs.0.shadow_prop_avg_scan_cost_ns "$s")
log "active limits $active (mean $ma, $ca ns per CPU); shadow's $shadow (mean $ms, $cs ns per CPU)"
log "books: active avg_scan_cost $ba ns, shadow's $bs ns; mean charge per scan: active $(get scan_ns_mean "$s") ns, shadow $(awk "BEGIN { printf \"%.0f\", $(get rules.prop.walk_ns "$s") / $(get rules.prop.judged "$s") }") ns"
check "both kinds of scan took time" awk "BEGIN { exit !($ca > 0 && $cs > 0) }"
check "each book learnt a scan cost" [ "${bs:-0}" -gt 0 -a "${ba:-0}" -gt 0 ]
log "the depth histograms $([ "$active" = "$shadow" ] && echo are the same || echo differ)"
check "each book learnt from its own scans: their average scan costs differ ($ba, $bs ns)" [ "$ba" -ne "$bs" ]
check "(sanity) the mean depths agree within 10% of the books' ratio ($ma, $ms)" \
	awk "BEGIN { rho = $bs / $ba; if (rho < 1) rho = 1 / rho; r = $ma / $ms; if (r < 1) r = 1 / r; exit !(r <= 1.1 * rho) }"
floor_a=$(floor_share $active)
stop_sched INT
check "exit code 0" [ "$SCHED_RC" -eq 0 ]

log "a shadow SIS_PROP beside none keeps its own books"
# The active policy none never scans. A shadow SIS_PROP still walks to its
# depth on every wakeup that reaches the scan, as an active one would scan,
# and that walk's time is what its average scan cost learns. The build that
# charged it the active scan's time left the average at 0 here. (Its depths
# did not show it on this load: a busy CPU's budget ages to nothing within
# a few jiffies, and with no budget the depth is the floor either way.)
measure /tmp/none.log --policy none --shadow prop
cost=$(get llcs.0.shadow_prop_avg_scan_cost_ns "$s")
shadow=$(get rules.prop.limit_hist "$s")
floor_s=$(floor_share $shadow)
log "scans $(get scans "$s"): active scan time $(get scan_ns "$s") ns, the walks' $(get shadow_scan_ns "$s") ns ($(get shadow_scan_ns_per_cpu "$s" | cut -d. -f1) ns per CPU); SIS_PROP's average scan cost $cost ns; shadow limits $shadow"
log "scans at SIS_PROP's floor: ${floor_s}% here, ${floor_a}% with SIS_PROP active"
check "none scanned nothing" [ "$(get scan_ns "$s")" -eq 0 ]
check "the shadow's walks took time" [ "$(get shadow_scan_ns "$s")" -gt 0 ]
check "SIS_PROP's average scan cost learnt from them" [ "${cost:-0}" -gt 0 ]
check "its depths sit at the floor about as often as an active SIS_PROP's (within 20 points)" \
	[ $((floor_s - floor_a)) -le 20 -a $((floor_a - floor_s)) -le 20 ]
stop_sched INT
check "exit code 0" [ "$SCHED_RC" -eq 0 ]
finish
