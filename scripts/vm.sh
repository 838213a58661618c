#!/usr/bin/env bash
# Boots a Debian sched_ext kernel in QEMU with a chosen CPU topology, runs a
# shell command inside it, and returns that command's output and exit
# status.
#
#   scripts/vm.sh [options] [--] COMMAND...
#
# The guest is a minimal initramfs: busybox, the scheduler, the benchmarks
# (hackbench, cyclictest, tbench, stress-ng, perf's sched benches, PostgreSQL when present) and the
# shared libraries they need. The project's tests/ folder is at /tests and
# the scheduler at /usr/bin/scx_sisutil, the lab at /usr/bin/sisutil-lab,
# scripts/guest/ at /guest. The command's stdout and stderr
# arrive on this script's stdout (second serial port); the kernel console
# goes to a log file (--console FILE, or printed on failure).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/target-dir.sh
source "$ROOT/scripts/lib/target-dir.sh"
SHAPE=2x4
MEM=2G
TIMEOUT=900
ACCEL=auto
BIN=$TARGET/release/scx_sisutil
LAB=$TARGET/release/sisutil-lab
CONSOLE=
OUTDIR=
EXTRA=()
APPEND_EXTRA=
RETRIES=0

usage() {
	cat <<'EOF'
usage: scripts/vm.sh [options] [--] COMMAND...
  --shape S      CPU topology, one of
                   LxC or LxCxT: L LLCs of C cores (T threads per core), each
                   LLC one socket and one NUMA node, e.g. 2x4 (default), 1x16,
                   1x8x2;
                   SsLlCc[Tt][-npsN]: S sockets of L LLCs (dies) of C cores of
                   T threads, N NUMA nodes per socket (1, 2 or 4; default 1),
                   e.g. 2s4l4c-nps2, 2s2l2c, 2s8l8c2t-nps4. Node distances are
                   10 within a node, 12 between the nodes of a socket and 32
                   between sockets (AMD's); the short form has QEMU's 20.
  --mem M        guest memory (default 2G)
  --timeout S    kill the guest after S seconds (default 900)
  --accel A      auto (KVM where it boots, else TCG), kvm or tcg
  --bin PATH     scheduler binary (default target/release/scx_sisutil)
  --lab PATH     lab binary (default target/release/sisutil-lab)
  --add SRC[:DST] put a file or folder into the guest (DST defaults to SRC)
  --console FILE keep the kernel console log there
  --out DIR      copy what the command leaves in the guest's /results to DIR
  --append ARGS  extra kernel command line
  --retries N    boot again, up to N times, when the guest dies without
                 reporting a result (exit 125 if the last one dies too)
EOF
}

die() {
	echo "vm.sh: $*" >&2
	exit 2
}

while [[ $# -gt 0 ]]; do
	case $1 in
	--shape) SHAPE=$2; shift 2 ;;
	--mem) MEM=$2; shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--accel) ACCEL=$2; shift 2 ;;
	--bin) BIN=$2; shift 2 ;;
	--lab) LAB=$2; shift 2 ;;
	--add) EXTRA+=("$2"); shift 2 ;;
	--console) CONSOLE=$2; shift 2 ;;
	--out) OUTDIR=$2; shift 2 ;;
	--append) APPEND_EXTRA=$2; shift 2 ;;
	--retries) RETRIES=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	--) shift; break ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
done
[[ $# -gt 0 ]] || die "no command given (see --help)"
[[ $TIMEOUT =~ ^[0-9]+$ && $TIMEOUT -gt 0 ]] || die "--timeout wants a positive number of seconds"
[[ $RETRIES =~ ^[0-9]+$ ]] || die "--retries wants a number of boots"
[[ -x $BIN ]] || die "scheduler binary $BIN not found; build it with cargo build --release --workspace"
[[ -x $LAB ]] || die "lab binary $LAB not found; build it with cargo build --release --workspace"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing; run scripts/setup.sh"

# Topology. Intel CPU models report one L3 per die: the short form makes
# each LLC a socket (and a node), the long form puts several dies in a
# socket and groups them into NUMA nodes, as AMD's NPS modes do.
# The lab reads the shape's grammar: SOCKETS, DIES (LLCs per socket),
# CORES, THREADS, NPS, LONG (the long form), NCPUS, NODES, PER_NODE.
shape_vars=$("$LAB" shape "$SHAPE") || exit 2
eval "$shape_vars"

KDIR=$("$ROOT/scripts/fetch-kernel.sh")

WORK=$(mktemp -d)
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT

# --- initramfs -------------------------------------------------------------
RD=$WORK/root
mkdir -p "$RD"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,etc,boot,tests,root,results}
mkdir -p "$RD/var"
ln -s /run "$RD/var/run"

copy_file() { # SRC DST: a file with its parent folders
	mkdir -p "$RD$(dirname "$2")"
	cp -L "$1" "$RD$2"
}

copy_libs() { # the shared libraries an ELF file needs
	local lib
	while read -r lib; do
		if [[ -n $lib && -e $lib && ! -e $RD$lib ]]; then
			copy_file "$lib" "$lib"
		fi
	done < <(ldd "$1" 2>/dev/null | grep -o '/[^ ]*' || true)
}

add_bin() { # PATH-IN-HOST [PATH-IN-GUEST]
	local src=$1 dst=${2:-$1}
	copy_file "$src" "$dst"
	copy_libs "$src"
}

BUSYBOX=$(command -v busybox) || die "busybox missing; run scripts/setup.sh"
cp "$BUSYBOX" "$RD/bin/busybox"
for applet in $("$BUSYBOX" --list); do
	[[ -e $RD/bin/$applet ]] || ln -s busybox "$RD/bin/$applet"
done

add_bin "$BIN" /usr/bin/scx_sisutil
add_bin "$LAB" /usr/bin/sisutil-lab
for tool in hackbench cyclictest tbench tbench_srv stress-ng taskset chrt nice nproc bpftool perf socat; do
	path=$(command -v "$tool" 2>/dev/null || true)
	# Some Debian releases ship bpftool and perf as version wrappers;
	# take the real binary.
	case $tool in
	bpftool) path=$(ls /usr/sbin/bpftool 2>/dev/null || true) ;;
	perf)
		real=$(ls /usr/bin/perf_* 2>/dev/null | sort -V | tail -n1 || true)
		[[ -n $real ]] && path=$real
		;;
	esac
	[[ -n $path && -x $path ]] || continue
	case $tool in
	perf) add_bin "$path" /usr/bin/perf ;;
	taskset | chrt | nice | nproc) add_bin "$path" "/usr/local/bin/$tool" ;;
	*) add_bin "$path" "/usr/bin/$tool" ;;
	esac
done
if [[ -f /usr/share/dbench/client.txt ]]; then
	copy_file /usr/share/dbench/client.txt /usr/share/dbench/client.txt
fi
# PostgreSQL for the ycsb bench, newest version: the three programs it
# runs, the catalog files initdb reads, the two modules a new cluster
# loads, and the zone the server is started in (UTC).
pg=$(ls -d /usr/lib/postgresql/*/bin/postgres 2>/dev/null | sort -V | tail -n1 || true)
if [[ -n $pg ]]; then
	pgdir=${pg%/bin/postgres}
	pgver=${pgdir##*/}
	for p in postgres initdb pgbench; do
		add_bin "$pgdir/bin/$p" "$pgdir/bin/$p"
	done
	for m in plpgsql dict_snowball; do
		add_bin "$pgdir/lib/$m.so" "$pgdir/lib/$m.so"
	done
	mkdir -p "$RD/usr/share/postgresql"
	cp -r "/usr/share/postgresql/$pgver" "$RD/usr/share/postgresql/"
	rm -rf "$RD/usr/share/postgresql/$pgver/man"
	copy_file /usr/share/zoneinfo/UTC /usr/share/zoneinfo/UTC
fi
# libbpf resolves CONFIG_* externs from /boot/config-$(uname -r); /init
# links it there, since the release string is the running kernel's.
copy_file "$KDIR/config" /boot/kernel-config
cp -r "$ROOT/tests/." "$RD/tests/" 2>/dev/null || true
mkdir -p "$RD/guest"
cp -r "$ROOT/scripts/guest/." "$RD/guest/" 2>/dev/null || true
for spec in "${EXTRA[@]}"; do
	src=${spec%%:*}
	dst=${spec#*:}
	[[ $spec == *:* ]] || dst=$src
	[[ -e $src ]] || die "--add: $src does not exist"
	if [[ -d $src ]]; then
		mkdir -p "$RD$dst"
		cp -r "$src/." "$RD$dst/"
	else
		if file -b "$src" | grep -q ELF; then
			add_bin "$src" "$dst"
		else
			copy_file "$src" "$dst"
		fi
	fi
done
# postgres: the user the database server runs as (it refuses root).
printf 'root:x:0:0:root:/root:/bin/sh\npostgres:x:101:101::/tmp:/bin/false\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$RD/etc/passwd"
printf 'root:x:0:\npostgres:x:101:\nnogroup:x:65534:\n' >"$RD/etc/group"
printf '127.0.0.1 localhost\n' >"$RD/etc/hosts"

{
	echo '#!/bin/sh'
	echo 'set -e'
	printf '%s\n' "$*"
} >"$RD/cmd.sh"

cat >"$RD/init" <<'EOF'
#!/bin/sh
export PATH=/usr/local/bin:/usr/bin:/usr/sbin:/bin:/sbin
export HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs shm /dev/shm
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
mount -t bpf bpf /sys/fs/bpf
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
ln -sf kernel-config "/boot/config-$(uname -r)"
ip link set lo up
hostname sisu-vm
OUT=/dev/ttyS1
stty -F $OUT raw -echo 2>/dev/null || true
echo "@@SISU-BOOTED" >$OUT
stty -F /dev/ttyS3 raw -echo 2>/dev/null || true
cd /root
sh /cmd.sh >$OUT 2>&1 </dev/null
rc=$?
# Results travel out base64-encoded on the third serial port.
if [ -n "$(ls -A /results)" ]; then
	tar -C /results -cz . | base64 >/dev/ttyS2
fi
echo "@@SISU-EXIT $rc" >$OUT
sync
poweroff -f
EOF
# /checkpoint: what /results holds now, sent out framed on the fourth
# serial port; a command that runs for hours calls it now and then (the
# lab's --checkpoint), and vm.sh keeps the last whole one when the guest
# dies before its end.
cat >"$RD/checkpoint" <<'EOF'
#!/bin/sh
{
	echo @@SISU-CHECKPOINT
	tar -C /results -cz . | base64
	echo @@SISU-CHECKPOINT-END
} >/dev/ttyS3
EOF
chmod +x "$RD/init" "$RD/cmd.sh" "$RD/checkpoint"
(cd "$RD" && find . | cpio -o -H newc --quiet >"$WORK/initrd.cpio")

# --- QEMU ------------------------------------------------------------------
smp="$NCPUS,sockets=$SOCKETS,dies=$DIES,cores=$CORES,threads=$THREADS"
numa=()
if ((NODES > 1)); then
	mem_mb=$(numfmt --from=iec "$MEM")
	per=$((mem_mb / NODES / 1048576))
	((per >= 64)) || die "--mem $MEM leaves less than 64M per NUMA node"
	for ((n = 0; n < NODES; n++)); do
		numa+=(-object "memory-backend-ram,id=m$n,size=${per}M"
			-numa "node,nodeid=$n,cpus=$((n * PER_NODE))-$(((n + 1) * PER_NODE - 1)),memdev=m$n")
	done
	# The long form takes AMD's distances (12 between the nodes of a socket,
	# 32 across sockets); the short form keeps QEMU's 20, as on a two-socket
	# Intel machine, near enough for wake-affine across sockets.
	((LONG)) && for ((a = 0; a < NODES; a++)); do
		for ((b = a + 1; b < NODES; b++)); do
			d=32
			((a / NPS == b / NPS)) && d=12
			numa+=(-numa "dist,src=$a,dst=$b,val=$d")
		done
	done
	MEM="$((per * NODES))M"
fi
# Skylake-Server aborts QEMU with dies > 1; SapphireRapids reports them.
CPU_MODEL=Skylake-Server-v4
((DIES > 1)) && CPU_MODEL=SapphireRapids
# More than 255 vCPUs need x2APIC interrupt routing: q35 with an IOMMU.
machine=()
((NCPUS > 255)) && machine=(-machine q35,kernel-irqchip=split -device intel-iommu,intremap=on,eim=on)

kvm_works() {
	# A paravirtual KVM can refuse stock kernels: boot once and remember.
	local verdict=$KDIR/kvm-verdict-$(uname -r)
	[[ -r /dev/kvm && -w /dev/kvm ]] || return 1
	if [[ ! -f $verdict ]]; then
		if timeout 60 qemu-system-x86_64 -accel kvm -cpu host -m 512M -smp 1 \
			-kernel "$KDIR/vmlinuz" -initrd "$WORK/initrd.cpio" -display none -monitor none \
			-serial null -serial stdio -no-reboot \
			-append "console=ttyS0 quiet panic=-1 rdinit=/bin/sh -- -c 'echo @@SISU-EXIT 0 >/dev/ttyS1; poweroff -f'" \
			2>/dev/null </dev/null | grep -q '@@SISU-EXIT'; then
			echo yes >"$verdict"
		else
			echo no >"$verdict"
		fi
	fi
	[[ $(cat "$verdict") == yes ]]
}

case $ACCEL in
tcg) accel=(-accel tcg,thread=multi -cpu $CPU_MODEL) ;;
kvm) accel=(-accel kvm -cpu $CPU_MODEL) ;;
auto)
	if kvm_works; then
		accel=(-accel kvm -cpu $CPU_MODEL)
	else
		accel=(-accel tcg,thread=multi -cpu $CPU_MODEL)
	fi
	;;
*) die "--accel wants auto, kvm or tcg" ;;
esac

console=${CONSOLE:-$WORK/console.log}
out=$WORK/out.log

# A TCG guest once stayed silent until its timeout, ten minutes, and then
# booted again in seconds. One that has not reported its boot within this
# many seconds (five times what a boot of a few vCPUs takes here, more for
# many; SISU_BOOT_WAIT sets it) is taken for dead and may boot again.
BOOT_WAIT=${SISU_BOOT_WAIT:-$((60 + NCPUS))}

# watch_boot: stops QEMU when the guest has not booted within BOOT_WAIT.
watch_boot() {
	local i
	for ((i = 0; i < BOOT_WAIT; i++)); do
		sleep 1
		grep -q '^@@SISU-BOOTED' "$out" 2>/dev/null && return
	done
	touch "$WORK/no-boot"
	[[ -s $WORK/qemu.pid ]] && kill "$(cat "$WORK/qemu.pid")" 2>/dev/null
}

# boot: one run of the guest. Sets rc to the command's exit status, empty
# when the guest stopped without reporting one, and qemu_rc.
boot() {
	rm -f "$WORK/results.b64" "$WORK/checkpoints.b64" "$WORK/qemu.pid" "$WORK/no-boot" "$out"
	watch_boot &
	local watcher=$!
	set +e
	timeout --foreground -k 10 "$TIMEOUT" qemu-system-x86_64 "${accel[@]}" -pidfile "$WORK/qemu.pid" \
		"${machine[@]}" -m "$MEM" -smp "$smp" "${numa[@]}" \
		-kernel "$KDIR/vmlinuz" -initrd "$WORK/initrd.cpio" \
		-append "console=ttyS0 quiet panic=-1 mitigations=off rdinit=/init $APPEND_EXTRA" \
		-display none -monitor none -no-reboot \
		-serial "file:$console" -chardev stdio,id=out,signal=off -serial chardev:out \
		-serial "file:$WORK/results.b64" -serial "file:$WORK/checkpoints.b64" \
		</dev/null 2>"$WORK/qemu.err" | stdbuf -oL tr -d '\r' | tee "$out" |
		grep --line-buffered -v '^@@SISU-\(EXIT \|BOOTED\)'
	qemu_rc=${PIPESTATUS[0]}
	kill $watcher 2>/dev/null
	wait $watcher 2>/dev/null
	set -e
	rc=$(sed -n 's/^@@SISU-EXIT \([0-9]*\)$/\1/p' "$out" | tail -n1)
}

# died: why the guest stopped without a result, and its console's end.
died() {
	if [[ -e $WORK/no-boot ]]; then
		echo "vm.sh: guest did not boot within ${BOOT_WAIT}s" >&2
	elif ((qemu_rc == 124 || qemu_rc == 137)); then
		echo "vm.sh: guest did not finish within ${TIMEOUT}s" >&2
	else
		echo "vm.sh: guest stopped without reporting a result (qemu exit $qemu_rc)" >&2
	fi
	grep -v "doesn't support requested feature" "$WORK/qemu.err" >&2 || true
	echo "vm.sh: last kernel console lines:" >&2
	tail -n 40 "$console" >&2 || true
}

# keep_checkpoint: the last whole checkpoint a guest that died sent out,
# unpacked into OUTDIR, where the run can be taken up from it.
keep_checkpoint() {
	[[ -n $OUTDIR && -s $WORK/checkpoints.b64 ]] || return 0
	tr -d '\r' <"$WORK/checkpoints.b64" | awk '
		$0 == "@@SISU-CHECKPOINT" { buf = ""; on = 1; next }
		$0 == "@@SISU-CHECKPOINT-END" { if (on) last = buf; on = 0; next }
		on { buf = buf $0 "\n" }
		END { printf "%s", last }' >"$WORK/checkpoint.b64"
	[[ -s $WORK/checkpoint.b64 ]] || return 0
	mkdir -p "$OUTDIR"
	if base64 -d <"$WORK/checkpoint.b64" | tar -xz -C "$OUTDIR"; then
		echo "vm.sh: kept the guest's last checkpoint of /results in $OUTDIR" >&2
	else
		echo "vm.sh: could not unpack the guest's last checkpoint" >&2
	fi
}

# A TCG guest now and then panics while the kernel patches its own text
# (an int3 oops just after a scheduler loads); a BPF scheduler cannot
# panic the kernel, sched_ext unloads it instead. So a dead guest may boot
# again, and says so.
for ((boots = 0; ; boots++)); do
	boot
	[[ -z $rc ]] || break
	died
	((boots < RETRIES)) || { keep_checkpoint; exit 125; }
	echo "vm.sh: the guest died; booting it again ($((boots + 1)) of $RETRIES)" >&2
done
if [[ -n $OUTDIR && -s $WORK/results.b64 ]]; then
	mkdir -p "$OUTDIR"
	if ! tr -d '\r' <"$WORK/results.b64" | base64 -d | tar -xz -C "$OUTDIR"; then
		echo "vm.sh: could not unpack the guest's /results" >&2
	fi
fi
exit "$rc"
