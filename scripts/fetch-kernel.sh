#!/usr/bin/env bash
# Fetches the newest Debian trixie-backports "cloud" kernel (which has
# sched_ext) and its config into a cache, without installing anything and
# without touching the system's apt sources. Prints the cache directory
# holding `vmlinuz` and `config` on stdout.
set -euo pipefail

CACHE=${SISUTIL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/scx_sisutil}
APT_DIR=$CACHE/apt
mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/archives/partial"

log() { echo "fetch-kernel: $*" >&2; }

# shellcheck source=lib/debian-mirror.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian-mirror.sh"
# The same archive (mirror, proxy or snapshot) the machine's apt uses.
if ! mirror=$(debian_mirror); then
	echo "fetch-kernel: no Debian archive in the apt sources to fetch the kernel from" >&2
	exit 1
fi
cat >"$APT_DIR/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie-backports main
SRC

APT_OPTS=(
	-o Dir::Etc::SourceList="$APT_DIR/sources.list"
	-o Dir::Etc::SourceParts=/dev/null
	-o Dir::State::Lists="$APT_DIR/lists"
	-o Dir::Cache::Archives="$APT_DIR/archives"
	-o Dir::Cache::pkgcache="" -o Dir::Cache::srcpkgcache=""
	-o APT::Architecture=amd64
	-o Debug::NoLocking=1
)

# The lists are refreshed at most once a day so that repeated runs stay
# offline-fast but a new kernel upload is still picked up.
stamp=$APT_DIR/lists/.stamp
if [[ ! -f $stamp ]] || [[ -n $(find "$stamp" -mmin +1440) ]]; then
	log "refreshing trixie-backports package lists"
	if apt-get "${APT_OPTS[@]}" update -qq >&2; then
		touch "$stamp"
	elif [[ -e $CACHE/current ]]; then
		log "could not refresh package lists; using cached kernel"
		readlink -f "$CACHE/current"
		exit 0
	else
		echo "fetch-kernel: cannot reach the Debian archive and no kernel is cached" >&2
		exit 1
	fi
fi

# The meta package depends on the newest image; its name carries the version.
image=$(apt-cache "${APT_OPTS[@]}" depends linux-image-cloud-amd64 |
	sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-cloud-amd64\)\(-unsigned\)\?$/\1/p' | head -n1)
if [[ -z $image ]]; then
	echo "fetch-kernel: cannot resolve linux-image-cloud-amd64 in trixie-backports" >&2
	exit 1
fi
ver=${image#linux-image-}
ver=${ver%-cloud-amd64}
dir=$CACHE/kernel-$ver
if [[ -f $dir/vmlinuz && -f $dir/config ]]; then
	ln -sfn "$dir" "$CACHE/current"
	echo "$dir"
	exit 0
fi

log "downloading kernel $ver"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get "${APT_OPTS[@]}" download -qq \
	"linux-binary-unsigned-$ver-cloud-amd64" "linux-base-$ver-cloud-amd64" >&2)
for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/root"; done
mkdir -p "$dir.part"
find "$tmp/root" -name vmlinuz.unsigned -exec cp {} "$dir.part/vmlinuz" \;
find "$tmp/root" -path '*/modules/*' -name config -exec cp {} "$dir.part/config" \;
if [[ ! -s $dir.part/vmlinuz || ! -s $dir.part/config ]]; then
	echo "fetch-kernel: kernel packages for $ver lack vmlinuz or config" >&2
	exit 1
fi
grep -q '^CONFIG_SCHED_CLASS_EXT=y' "$dir.part/config" || {
	echo "fetch-kernel: kernel $ver lacks CONFIG_SCHED_CLASS_EXT" >&2
	exit 1
}
echo "$ver" >"$dir.part/version"
rm -rf "$dir" && mv "$dir.part" "$dir"
ln -sfn "$dir" "$CACHE/current"
echo "$dir"
