#!/usr/bin/env bash
# Installs scx_sisutil: builds it, puts the binary in PREFIX/bin (default
# /usr/local), and its systemd unit and options file where systemd looks.
# Idempotent; an existing /etc/default/scx_sisutil is kept. --lab installs
# the lab (sisutil-lab: A/B runs, workloads, reports) beside it; the
# scheduler itself carries none of it.
#
#   sudo scripts/install.sh [--prefix DIR] [--no-service] [--lab]
#
# Then: systemctl enable --now scx_sisutil   (or, with the scx project's
# scx.service: SCX_SCHEDULER=scx_sisutil in /etc/default/scx)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/target-dir.sh
source "$ROOT/scripts/lib/target-dir.sh"
PREFIX=/usr/local
SERVICE=1
LAB=0
while [[ $# -gt 0 ]]; do
	case $1 in
	--prefix) PREFIX=$2; shift 2 ;;
	--no-service) SERVICE=0; shift ;;
	--lab) LAB=1; shift ;;
	-h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
if [[ $(id -u) -ne 0 ]]; then
	echo "install.sh: must run as root (it writes to $PREFIX and /etc)" >&2
	exit 1
fi

"$ROOT/scripts/setup.sh" --build
(cd "$ROOT" && cargo build --release --locked)
install -D -m 0755 "$TARGET/release/scx_sisutil" "$PREFIX/bin/scx_sisutil"
echo "install.sh: $PREFIX/bin/scx_sisutil ($("$PREFIX/bin/scx_sisutil" --version))"
if ((LAB)); then
	(cd "$ROOT" && cargo build --release --locked -p sisutil_lab)
	install -D -m 0755 "$TARGET/release/sisutil-lab" "$PREFIX/bin/sisutil-lab"
	echo "install.sh: $PREFIX/bin/sisutil-lab"
fi
((SERVICE)) || exit 0

unit=/etc/systemd/system/scx_sisutil.service
sed "s|^ExecStart=/usr/local/bin/scx_sisutil |ExecStart=$PREFIX/bin/scx_sisutil |" \
	"$ROOT/services/scx_sisutil.service" >"$unit.tmp"
chmod 0644 "$unit.tmp"
mv "$unit.tmp" "$unit"
if [[ ! -e /etc/default/scx_sisutil ]]; then
	install -D -m 0644 "$ROOT/services/scx_sisutil.default" /etc/default/scx_sisutil
fi
if [[ -d /run/systemd/system ]]; then
	systemctl daemon-reload
fi
echo "install.sh: $unit; start it with: systemctl enable --now scx_sisutil"
