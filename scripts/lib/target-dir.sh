# Sourced after ROOT is set. libbpf's vendored build (make) fails when the
# target directory's path holds a space, so a clone at such a path builds
# into a folder of the user's cache instead (CARGO_TARGET_DIR, exported for
# every cargo call). TARGET is the folder cargo builds into.
if [[ $ROOT == *[[:space:]]* && -z ${CARGO_TARGET_DIR:-} ]]; then
	_sum=$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)
	export CARGO_TARGET_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/scx_sisutil/target-$_sum
fi
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
