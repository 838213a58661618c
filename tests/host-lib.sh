# Sourced by the tests that run on the host (tests/readme.sh,
# tests/resume.sh): TAP-like lines that scripts/test.sh counts, from the
# top of the repository.
ROOT=$(cd "$(dirname "${BASH_SOURCE[1]}")/.." && pwd)
cd "$ROOT"
passed=0
failed=0

# check WHAT COMMAND...: "ok - WHAT" when the command succeeds, else
# "not ok - WHAT".
check() {
	local what=$1
	shift
	if "$@"; then
		echo "ok - $what"
		passed=$((passed + 1))
	else
		echo "not ok - $what"
		failed=$((failed + 1))
	fi
}

# finish: the counts, and the exit status they make.
finish() {
	echo "$passed passed, $failed failed, 0 skipped"
	((failed == 0))
}
