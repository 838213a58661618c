#!/usr/bin/env bash
# A run whose guest dies is taken up from its last checkpoint, as a long
# study's would be: scripts/ab.sh --retries 1 with a second arm that
# panics the guest's kernel when it first loads (and, in a resumed run,
# loads SIS_PROP like any peer). The first boot dies after util's first
# sample went out as a checkpoint; the second keeps that sample, runs the
# other three, and the results file holds each sample once and says it
# was resumed. Without checkpoints nothing would come out of the first
# boot; without --resume the kept sample would run again.
#
#   tests/resume.sh     (from scripts/test.sh, as root)
set -uo pipefail

# shellcheck source=host-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/host-lib.sh"
# shellcheck source=../scripts/lib/target-dir.sh
source "$ROOT/scripts/lib/target-dir.sh"
LAB=$TARGET/release/sisutil-lab
OUT=$TARGET/vm-results/resume
rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
log=$OUT.log

crash='test -e /resume/results.json || echo c >/proc/sysrq-trigger; exec scx_sisutil --policy prop'
check "scripts/ab.sh --retries 1 finishes a run whose guest died" \
	sh -c "scripts/ab.sh --out '$OUT' --retries 1 -- --arms util --arm 'crash=$crash' \
		--bench hackbench --groups 1 --loops 100 --modes process --ipc pipe \
		--iterations 2 --checkpoint-secs 0 >'$log' 2>&1"
grep -E '^(ab|vm)\.sh:' "$log" | grep -v 'last kernel console' | sed 's/^/# /'
check "the first boot's kernel was crashed" grep -q 'sysrq: Trigger a crash' "$OUT/boot1-console.log"
check "its last checkpoint was kept" grep -q "kept the guest's last checkpoint" "$log"
check "the run was taken up from it" grep -q 'taking the run up from its last checkpoint' "$log"
n=$($LAB get --file "$OUT/results.json" 'points.0.samples.*.*.iteration' | wc -l)
check "every sample once: 2 arms x 2 iterations ($n)" [ "$n" -eq 4 ]
its=$($LAB get --file "$OUT/results.json" 'points.0.samples.util.*.iteration' | tr '\n' ' ')
check "util's iterations are 0 and 1 ($its)" [ "$its" = "0 1 " ]
resumed=$($LAB get --file "$OUT/results.json" 'resumed.*')
once_with_one() { [ "$(printf '%s\n' "$resumed" | wc -l)" -eq 1 ] && [[ $resumed == *"with 1 sample(s)" ]]; }
check "the file says it resumed once, with the one sample ($resumed)" once_with_one
check "the report says so" grep -q '^RESUMED after its machine died' "$OUT/report.txt"

out=$(scripts/ab.sh --resume --out "$OUT/none" 2>&1)
rc=$?
check "--resume without a run to take up fails with one line ($out)" \
	[ "$rc" -eq 2 -a "$(printf '%s\n' "$out" | wc -l)" -eq 1 ]
finish
