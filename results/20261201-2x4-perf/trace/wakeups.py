#!/usr/bin/env python3
"""Splits the tbench wakeups of a `perf script -F cpu,time,event,trace` dump
(from trace.sh) by where the wakee went, with the time from sched_waking to
the wakee running, and prints each task's length of run and the migrations.

usage: wakeups.py eevdf.txt util.txt
"""
import collections
import re
import statistics
import sys

LINE = re.compile(r'\s*\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s+(.*)')


def quantiles(a):
    a = sorted(a)
    n = len(a)
    return (f"n={n:6} mean={statistics.mean(a):7.1f} p50={a[n // 2]:6.1f} "
            f"p90={a[n * 9 // 10]:7.1f} p99={a[n * 99 // 100]:7.1f}")


def analyse(path):
    running = {}      # cpu -> pid now running there
    waking = {}       # pid -> (t, waker cpu, prev cpu, prev was idle)
    woken = {}        # pid -> (t of waking, class)
    started = {}      # pid -> t it was switched in
    lat = collections.defaultdict(list)
    runs = []
    migrations = collections.Counter()
    for line in open(path, errors='replace'):
        m = LINE.match(line)
        if not m:
            continue
        cpu, t, ev = int(m.group(1)), float(m.group(2)) * 1e6, m.group(3)
        kv = dict(re.findall(r'(\w+)=(\S+)', m.group(4)))
        if ev == 'sched_waking' and kv.get('comm', '').startswith('tbench'):
            prev = int(kv['target_cpu'])
            waking[kv['pid']] = (t, cpu, prev, running.get(prev) == '0')
        elif ev == 'sched_wakeup' and kv['pid'] in waking:
            t0, waker, prev, idle = waking.pop(kv['pid'])
            dst = int(kv['target_cpu'])
            where = 'prev' if dst == prev else 'waker' if dst == waker else 'other'
            kind = f"{where}, prev {'idle' if idle else 'busy'}"
            if waker == prev:
                kind += ', woken from prev'
            woken[kv['pid']] = (t0, kind)
        elif ev == 'sched_switch':
            running[cpu] = kv['next_pid']
            if kv['prev_pid'] in started:
                runs.append(t - started.pop(kv['prev_pid']))
            if kv['next_comm'].startswith('tbench'):
                started[kv['next_pid']] = t
            if kv['next_pid'] in woken:
                t0, kind = woken.pop(kv['next_pid'])
                lat[kind].append(t - t0)
                lat['all'].append(t - t0)
        elif ev == 'sched_migrate_task' and kv.get('comm', '').startswith('tbench'):
            migrations['tbench'] += 1
    print(path)
    print('  waking to running (us), by where the wakee went:')
    for kind, a in sorted(lat.items(), key=lambda kv: -len(kv[1])):
        print(f"    {kind:32} {quantiles(a)}")
    print(f"  run length (us)                    {quantiles(runs)}")
    print(f"  tbench migrations                  {migrations['tbench']}")


for p in sys.argv[1:]:
    analyse(p)
