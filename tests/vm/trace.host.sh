#!/usr/bin/env bash
# The host half of tests/vm/trace.sh: opens the Perfetto trace the lab
# wrote in the guest with Perfetto's own schema (perfetto_trace_pb2, from
# Perfetto's Python package, in a virtualenv this script makes once), and
# checks it against the CSV it came from: a track per CPU with an instant
# per wakeup on record, a track per task with a begin and an end per wait,
# and the LLCs' counters.
#
#   tests/vm/trace.host.sh DIR    (DIR: the guest's /results, copied out)
set -euo pipefail

DIR=$1/trace
VENV=${XDG_CACHE_HOME:-$HOME/.cache}/scx_sisutil/pyenv
if [[ ! -x $VENV/bin/python ]] || ! "$VENV/bin/python" -c 'import perfetto, google.protobuf' 2>/dev/null; then
	python3 -m venv "$VENV"
	"$VENV/bin/pip" install --quiet --disable-pip-version-check 'perfetto==0.59.1'
fi
"$VENV/bin/python" - "$DIR" <<'PY'
import csv, sys
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

d = sys.argv[1]
trace = pb.Trace()
with open(f"{d}/trace.pftrace", "rb") as f:
    trace.ParseFromString(f.read())
rows = list(csv.DictReader(open(f"{d}/wakeups.csv")))
llcs = list(csv.DictReader(open(f"{d}/llcs.csv")))
tracks = {p.track_descriptor.uuid: p.track_descriptor for p in trace.packet if p.HasField("track_descriptor")}
events = [p for p in trace.packet if p.HasField("track_event")]
kinds = {}
for p in events:
    kinds[p.track_event.type] = kinds.get(p.track_event.type, 0) + 1
T = pb.TrackEvent
on_cpus = sum(p.track_event.type == T.TYPE_INSTANT and tracks[p.track_event.track_uuid].name.startswith("CPU ")
              for p in events if p.track_event.track_uuid in tracks)
checks = [
    ("every packet is on the trusted sequence", all(p.trusted_packet_sequence_id == 1 for p in trace.packet)),
    ("a track per CPU wakeups were placed on", sum(t.name.startswith("CPU ") for t in tracks.values()) == len({r["cpu"] for r in rows})),
    ("an instant on a CPU's track per wakeup on record", on_cpus == len(rows)),
    ("a begin and an end per wait", kinds.get(T.TYPE_SLICE_BEGIN, 0) == len(rows) == kinds.get(T.TYPE_SLICE_END, 0)),
    ("two counter values per LLC sample", kinds.get(T.TYPE_COUNTER, 0) == 2 * len(llcs)),
    ("counter tracks say their unit", all(t.counter.unit_name for t in tracks.values() if t.HasField("counter"))),
    ("every event is on a described track", all(p.track_event.track_uuid in tracks for p in events)),
    ("events come in time order", all(a.timestamp <= b.timestamp for a, b in zip(events, events[1:]))),
]
first = next(p.track_event for p in events if p.track_event.type == T.TYPE_INSTANT)
names = {a.name for a in first.debug_annotations}
checks.append(("a wakeup's instant carries its wakee, waker and wait", {"wakee", "waker", "wait_us"} <= names))
failed = 0
for what, ok in checks:
    print(("ok - " if ok else "not ok - ") + "perfetto: " + what)
    failed += not ok
print(f"# {len(trace.packet)} packets, {len(tracks)} tracks, {len(rows)} wakeups, {len(llcs)} LLC samples")
sys.exit(1 if failed else 0)
PY
