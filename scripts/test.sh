#!/usr/bin/env bash
# The test command. Installs what is missing (as root), checks formatting
# and lints, runs the unit tests, builds the scheduler, then runs every VM
# test in tests/vm/ in its own freshly booted VM with the topology its
# "# shape:" line asks for.
#
#   scripts/test.sh [--unit-only | --vm-only] [VM-TEST-NAME...]
#
# Then tests/resume.sh takes up a run whose guest died ("resume" picks it
# alone), and last tests/readme.sh runs the README's two commands in its
# order ("readme"). Kernel console logs of the VM tests land in
# target/vm-logs/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/target-dir.sh
source "$ROOT/scripts/lib/target-dir.sh"
cd "$ROOT"

UNIT=1
VM=1
ONLY=()
for arg in "$@"; do
	case $arg in
	--unit-only) VM=0 ;;
	--vm-only) UNIT=0 ;;
	-h | --help)
		sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	-*)
		echo "test.sh: unknown option $arg" >&2
		exit 2
		;;
	*) ONLY+=("$arg") ;;
	esac
done

if [[ $(id -u) -eq 0 ]]; then
	scripts/setup.sh
elif ! command -v clang-19 >/dev/null || ! command -v qemu-system-x86_64 >/dev/null; then
	echo "test.sh: packages are missing; run it once as root (sudo scripts/test.sh)" >&2
	exit 2
fi

section() { printf '\n=== %s\n' "$*"; }

if ((UNIT)); then
	section "format"
	cargo fmt --all --check
	section "clippy"
	cargo clippy --release --workspace --all-targets --locked -- -D warnings
	section "unit tests"
	# Tests that cannot run here (not root, say) record why.
	SKIPS=$(mktemp)
	SCX_SISUTIL_SKIPS=$SKIPS cargo test --release --locked --workspace
	if [[ -s $SKIPS ]]; then
		echo "skipped ($(wc -l <"$SKIPS")):"
		sed 's/^/  /' "$SKIPS"
	fi
	rm -f "$SKIPS"
fi

((VM)) || exit 0

section "build"
cargo build --release --locked --workspace

mkdir -p target/vm-logs

# timed FILE: stdin to stdout and FILE, and to FILE.timed each line after
# the seconds since the test began, to see where a test spends its time.
timed() {
	local t0=$SECONDS line
	: >"$1.timed"
	while IFS= read -r line; do
		printf '%s\n' "$line"
		printf '%4d %s\n' $((SECONDS - t0)) "$line" >>"$1.timed"
	done | tee "$1"
}
passed=0
failed=0
skipped=0
skipped_checks=()
failed_tests=()
retried_tests=()
for test in tests/vm/*.sh; do
	name=$(basename "$test" .sh)
	[[ $name == lib || $name == *.host ]] && continue
	if ((${#ONLY[@]})) && [[ ! " ${ONLY[*]} " == *" $name "* ]]; then
		continue
	fi
	shape=$(sed -n 's/^# shape: *//p' "$test" | head -n1)
	timeout=$(sed -n 's/^# timeout: *//p' "$test" | head -n1)
	section "vm: $name (shape ${shape:-2x4})"
	start=$(date +%s)
	# A guest that died boots once more (vm.sh's --retries says why).
	set +e
	out="$TARGET/vm-results/$name"
	rm -rf "$out"
	scripts/vm.sh --shape "${shape:-2x4}" --timeout "${timeout:-600}" --retries 1 \
		--console "target/vm-logs/$name.console" --out "$out" -- sh "/tests/vm/$name.sh" \
		2>"target/vm-logs/$name.err" | timed "target/vm-logs/$name.out"
	rc=${PIPESTATUS[0]}
	# A test's host half checks what the guest left in /results with tools
	# the guest lacks; its checks count with the guest's.
	if ((rc == 0)) && [[ -x tests/vm/$name.host.sh ]]; then
		tests/vm/$name.host.sh "$out" 2>&1 | tee "target/vm-logs/$name.host.out"
		rc=${PIPESTATUS[0]}
		passed=$((passed + $(grep -c '^ok - ' "target/vm-logs/$name.host.out" || true)))
		failed=$((failed + $(grep -c '^not ok - ' "target/vm-logs/$name.host.out" || true)))
	fi
	set -e
	cat "target/vm-logs/$name.err" >&2
	if grep -q '^vm.sh: the guest died; booting it again' "target/vm-logs/$name.err"; then
		retried_tests+=("$name")
	fi
	counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "target/vm-logs/$name.out" | tail -n1 || true)
	read -r p _ f _ s _ <<<"${counts//,/}"
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	skipped=$((skipped + ${s:-0}))
	while IFS= read -r line; do
		skipped_checks+=("$name: ${line#skip - }")
	done < <(grep '^skip - ' "target/vm-logs/$name.out" || true)
	if ((rc != 0)); then
		# A test that died before counting still counts as a failure.
		((${f:-0} > 0)) || failed=$((failed + 1))
		failed_tests+=("$name")
		echo "--- $name failed (exit $rc); kernel console tail:"
		tail -n 30 "target/vm-logs/$name.console" || true
	fi
	echo "--- $name: exit $rc in $(($(date +%s) - start))s"
done

# host_test NAME TITLE: tests/NAME.sh, a test that runs on the host (the
# name picks it alone), counted with the VM tests.
host_test() {
	((${#ONLY[@]} == 0)) || [[ " ${ONLY[*]} " == *" $1 "* ]] || return 0
	section "$2"
	local start rc
	start=$(date +%s)
	set +e
	"tests/$1.sh" 2>&1 | tee "target/vm-logs/$1.out"
	rc=${PIPESTATUS[0]}
	set -e
	passed=$((passed + $(grep -c '^ok - ' "target/vm-logs/$1.out" || true)))
	failed=$((failed + $(grep -c '^not ok - ' "target/vm-logs/$1.out" || true)))
	((rc == 0)) || failed_tests+=("$1")
	echo "--- $1: exit $rc in $(($(date +%s) - start))s"
}

# A run whose guest dies, taken up from its checkpoint.
host_test resume "a run taken up after its guest died"
# The README's two commands in its order, as a new user runs them: the
# main job, then the unit tests with its results in place.
host_test readme "the README's two commands"

section "summary"
if ((${#retried_tests[@]})); then
	echo "VM tests run again after their guest died: ${retried_tests[*]}"
fi
if ((${#failed_tests[@]})); then
	echo "failed VM tests: ${failed_tests[*]}"
fi
for c in "${skipped_checks[@]}"; do
	echo "skipped: $c"
done
echo "vm: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
