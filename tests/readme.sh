#!/usr/bin/env bash
# The README's two commands in its order, as a new user runs them: the
# main job (scripts/ab.sh, at the quick preset the README offers, so that
# it fits the tests' time), then the tests' first half (scripts/test.sh
# --unit-only: fmt, clippy, the unit tests, among them the check that the
# documents say what their results say). A user's own run must land where
# they keep it without the suite objecting to it.
#
#   tests/readme.sh     (from scripts/test.sh, as root)
set -uo pipefail

# shellcheck source=host-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/host-lib.sh"

# The first command as the README gives it, before its comment.
first=$(sed -n '/^## Two commands/,/^```$/p' README.md | sed -n 's/^sudo \(scripts\/[a-z.]*\).*/\1/p' | head -n1)
check "the README's first command is scripts/ab.sh ($first)" [ "$first" = scripts/ab.sh ]
check "the README offers its quick preset" grep -q -- "scripts/ab.sh -- --preset quick" README.md

before=$(ls -1 runs 2>/dev/null)
kept=$(git status --porcelain --untracked-files=all -- results | wc -l)
log=$(mktemp)
check "scripts/ab.sh -- --preset quick runs" sh -c "scripts/ab.sh -- --preset quick >'$log' 2>&1"
tail -n 3 "$log" | sed 's/^/# /'
new=$(comm -13 <(echo "$before") <(ls -1 runs 2>/dev/null))
check "its results land in a new folder of runs/ ($new)" [ -n "$new" -a -s "runs/$new/results.json" -a -s "runs/$new/report.txt" ]
check "it left results/ as it was" [ "$(git status --porcelain --untracked-files=all -- results | wc -l)" -eq "$kept" ]
check "git ignores runs/" git check-ignore -q "runs/$new/results.json"
check "scripts/test.sh --unit-only passes with the run there" sh -c "scripts/test.sh --unit-only >'$log' 2>&1"
grep -E '^test result|panicked' "$log" | sed 's/^/# /' | tail -n 5
[[ -n $new ]] && rm -rf "runs/$new"
rmdir runs 2>/dev/null
rm -f "$log"
finish
