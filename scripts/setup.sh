#!/usr/bin/env bash
# Installs every system package that building, testing and the VM need
# (--build: only what building needs). Idempotent: packages already present
# are left alone, the backports source is written only once.
set -euo pipefail

ONLY_BUILD=0
[[ ${1:-} == --build ]] && ONLY_BUILD=1

if [[ $(id -u) -ne 0 ]]; then
	echo "setup.sh: must run as root (it installs system packages)" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive

# Build: clang-19 for the BPF object (the scx build crate needs clang >= 18),
# libelf/zlib for the vendored libbpf, pkg-config to find them.
BUILD_PKGS=(clang-19 llvm-19 libelf-dev zlib1g-dev pkg-config make)
# VM: busybox for the guest's userland, cpio to pack the initramfs, apt to
# fetch the kernel packages without installing them.
VM_PKGS=(busybox-static cpio gzip ca-certificates debian-archive-keyring)
# Workloads and tools that go into the guest.
# postgresql-15 is the database server of the ycsb bench (and its pgbench).
BENCH_PKGS=(rt-tests dbench linux-perf bpftool stress-ng util-linux procps socat postgresql-15)
# Tests: the scx project's OpenMetrics exporter (a Python script shipped in
# the scx_stats crate) runs against the stats server in the unit tests.
TEST_PKGS=(python3 python3-venv python3-prometheus-client)

BACKPORTS=/etc/apt/sources.list.d/bookworm-backports.sources
# shellcheck source=lib/debian-mirror.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian-mirror.sh"

missing() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
	done
}

if [[ ! -f $BACKPORTS ]]; then
	if ! mirror=$(debian_mirror); then
		echo "setup.sh: no Debian archive in the apt sources; add one, then run this again" >&2
		exit 1
	fi
	cat >"$BACKPORTS" <<SRC
Types: deb
URIs: $mirror
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	NEED_UPDATE=1
fi

# systemd-analyze checks the service unit in the tests.
if ((ONLY_BUILD)); then
	mapfile -t TODO < <(missing "${BUILD_PKGS[@]}")
else
	mapfile -t TODO < <(missing "${BUILD_PKGS[@]}" "${VM_PKGS[@]}" "${BENCH_PKGS[@]}" "${TEST_PKGS[@]}" systemd qemu-system-x86)
fi
if [[ ${#TODO[@]} -eq 0 ]]; then
	echo "setup.sh: all packages present"
	exit 0
fi

echo "setup.sh: installing ${TODO[*]}"
apt-get update -qq
mapfile -t PLAIN < <(printf '%s\n' "${TODO[@]}" | grep -vx qemu-system-x86 || true)
if [[ ${#PLAIN[@]} -gt 0 ]]; then
	apt-get install -y -qq --no-install-recommends "${PLAIN[@]}"
fi
# QEMU must come from backports: the image's qemu-utils is from there and
# bookworm's own qemu-system conflicts with it.
if printf '%s\n' "${TODO[@]}" | grep -qx qemu-system-x86; then
	apt-get install -y -qq --no-install-recommends -t bookworm-backports qemu-system-x86
fi
echo "setup.sh: done"
