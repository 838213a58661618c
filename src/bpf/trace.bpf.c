/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every wakeup on record: what the placement decided (the rule, its depth,
 * the CPUs its scan examined, whether an idle CPU existed and was found,
 * the shadow rules' verdicts, where the task went), joined with what the
 * task then waited, its first run. The counters say how often a rule
 * misses; a record says what that miss cost whom.
 *
 * The placement fills a record in the task's context (trace_note(), from
 * note_wake()); the task's first run completes it and puts it in the ring
 * buffer (trace_emit(), from wait_end()), which the scheduler's process
 * drains into a file. One wakeup in cfg.trace_every per CPU is put on
 * record (0: none, and nothing here runs). Nothing ever waits on
 * userspace: a full ring drops the record and counts it, so a slow or dead
 * reader costs drops, never a stall.
 */
#include "sisutil.bpf.h"

/* Whether this CPU's next wakeup goes on record (one in cfg.trace_every). */
static bool trace_due(void)
{
	struct sisu_cpu_ctx *c = cpu_ctx(bpf_get_smp_processor_id());
	u32 every = cfg.trace_every;

	if (!every || !c)
		return false;
	if (++c->trace_tick < every)
		return false;
	c->trace_tick = 0;
	return true;
}

/*
 * What the placement of @p decided (@pk, @pol the active policy), kept in
 * its context until it runs; the caller adds prev and the target when this
 * says the wakeup goes on record. The scan's own figures are the per-CPU
 * verdicts record's, which the scan of this very placement filled in
 * (select_idle_cpu()).
 */
__hidden bool trace_note(struct task_struct *p, struct task_ctx *tctx, const struct pick *pk,
			 u32 pol)
{
	struct sisu_trace_rec *r = &tctx->trace;
	struct task_struct *waker;
	struct verdicts *v;
	u32 zero = 0;
	bool scanned;

	tctx->traced = 0;
	if (!trace_due())
		return false;
	r->woke_ns = tctx->woke_at;
	r->wait_ns = 0;
	r->wakee_pid = p->pid;
	r->cpu = pk->cpu;
	r->ran_cpu = -1;
	r->rule = pol;
	r->kind = tctx->wake_kind;
	r->outcome = pk->outcome;
	r->flags = pk->waker ? 0 : SISU_TRACE_QUEUED;
	r->waker_pid = 0;
	__builtin_memset(r->waker_comm, 0, sizeof(r->waker_comm));
	if (pk->waker) {
		waker = bpf_get_current_task_btf();
		r->waker_pid = waker->pid;
		bpf_probe_read_kernel_str(r->waker_comm, sizeof(r->waker_comm), waker->comm);
	}
	scanned = pol != SISU_POL_BUILTIN &&
		  (r->kind == SISU_WAIT_FOUND || r->kind == SISU_WAIT_MISSED ||
		   r->kind == SISU_WAIT_NONE);
	v = scanned ? bpf_map_lookup_elem(&verdicts_buf, &zero) : NULL;
	if (v) {
		r->flags |= SISU_TRACE_SCANNED;
		r->scan_rule = v->scan_rule;
		r->limit = v->scan_limit;
		r->examined = v->scan_examined;
		r->shadow_rules = v->counted;
		r->shadow_found = v->found & v->counted;
	} else {
		r->scan_rule = pol;
		r->limit = 0;
		r->examined = 0;
		r->shadow_rules = 0;
		r->shadow_found = 0;
	}
	tctx->traced = 1;
	return true;
}

/* @p runs, @wait_ns after its placement: its record goes out (the caller
 * checked tctx->traced, so that an untraced run makes no call). */
__hidden void trace_emit(struct task_struct *p, struct task_ctx *tctx, u64 wait_ns)
{
	struct sisu_cpu_ctx *c;
	s32 cpu;

	if (!tctx->traced)
		return;
	tctx->traced = 0;
	cpu = bpf_get_smp_processor_id();
	c = cpu_ctx(cpu);
	tctx->trace.wait_ns = wait_ns;
	tctx->trace.ran_cpu = cpu;
	bpf_probe_read_kernel_str(tctx->trace.wakee_comm, sizeof(tctx->trace.wakee_comm), p->comm);
	/*
	 * No wakeup: the scheduler's loop reads the ring on its own clock and
	 * nobody sleeps on it, so the irq_work a wakeup queues on this CPU
	 * would buy nothing.
	 */
	if (bpf_ringbuf_output(&trace_rb, &tctx->trace, sizeof(tctx->trace), BPF_RB_NO_WAKEUP)) {
		if (c)
			c->trace_dropped++;
	} else if (c) {
		c->trace_sent++;
	}
}
