"""The cluster simulator with plug-in policies (numba; imported only when a spec names one).

The event loop is ``simulator._run``'s (arrivals, ends and kills at a time, then one
scheduling pass, the same bookkeeping and metric integrals), with the pass asking the
queue plug-in which waiting job starts and the allocation plug-in (or a built-in
allocation policy) which nodes it gets. The plug-ins are numba first-class functions
(``types.FunctionType`` of ``plugin_api.QUEUE_SIG`` / ``ALLOC_SIG``): this kernel is
compiled once for those signatures and cached, whatever plug-ins a spec names, and a
built-in-only spec never compiles it.

For the plug-ins the kernel keeps plain views: the waiting jobs in arrival order with
no holes (a start removes its entry), and the running jobs by estimated end. It counts
the waiting jobs by size, so that it calls the queue plug-in only while the smallest
waiting job's cores are free (any choice would fail otherwise; on CTC-SP2 with EASY
this saves a fifth of the calls). Every
choice is checked before anything changes; an impossible one stops the run with an
error code (``BAD_POSITION`` ...) and its details in ``err``, which :func:`simulate` turns
into a :class:`~workloads.kernel_support.plugins.PluginError`.
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.plugins import PluginError, readonly
from . import allocation, events
from ..kernel_support.jit import kernel_without_refcount as kernel, inline_without_refcount as kernel_inline
from .bookkeeping import (
    I_BY_COUNT, I_FREE, I_HSIZE, I_Q, I_QH, I_QT, I_R, I_RVER, _advance_clocks, _record_state, finish_job, started,
    take_chosen, take_in_order)
from .plugin_api import Jobs, Nodes
from .simulator import Result, new_state, result_of

#: A queue code none of the built-in branches of ``started`` / ``finish_job`` act on.
PLUGIN = 4
#: err[0] codes: what was impossible.
BAD_POSITION, NO_FIT, BAD_COUNT, BAD_NODE, BAD_PROCS, TWICE, OVER, BAD_TOTAL = range(1, 9)


@kernel_inline
def _fail(err, code: int, now: float, a: float, b: float, c: float, d: float = 0.0) -> int:
    err[0] = code
    err[1] = now
    err[2] = a
    err[3] = b
    err[4] = c
    err[5] = d
    return code


@kernel_inline
def _room(j, nd, jb) -> int:
    """Processes of job j the nodes can take now (stops counting at the job's size)."""
    n, mr, dr = jb[1][j], jb[2][j], jb[3][j]
    room = 0
    for i in range(nd[4].size):
        room += allocation.capacity(i, mr, dr, nd[4], nd[5], nd[6])
        if room >= n:
            break
    return room


@kernel_inline
def _check_alloc(j, m, now, nd, jb, cand_node, cand_k, mark, err) -> int:
    """0 if ``cand_node[:m]``, ``cand_k[:m]`` is a placement of job j the nodes can take now."""
    p = nd[0].size
    if m < 1 or m > p:
        return _fail(err, BAD_COUNT, now, j, m, p)
    total = 0
    code = 0
    for a in range(m):
        i = cand_node[a]
        k = cand_k[a]
        if i < 0 or i >= p:
            code = _fail(err, BAD_NODE, now, j, a, i)
            break
        if k < 1:
            code = _fail(err, BAD_PROCS, now, j, i, k)
            break
        if mark[i] == j + 1:
            code = _fail(err, TWICE, now, j, i, a)
            break
        mark[i] = j + 1
        cap = allocation.capacity(i, jb[2][j], jb[3][j], nd[4], nd[5], nd[6])
        if k > cap:
            code = _fail(err, OVER, now, j, i, k, cap)
            break
        total += k
    for a in range(m):    # unmark (stamps are per job, but a failed job may be chosen again later)
        i = cand_node[a]
        if 0 <= i < p:
            mark[i] = 0
    if code == 0 and total != jb[1][j]:
        code = _fail(err, BAD_TOTAL, now, j, total, jb[1][j])
    return code


@kernel_inline
def _running_insert(run_job, run_end, ctr, end: float, j: int) -> None:
    """Insert job j by estimated end (ties: insertion order), as EASY's running list."""
    k = ctr[I_R]
    while k > 0 and run_end[k - 1] > end:
        run_end[k] = run_end[k - 1]
        run_job[k] = run_job[k - 1]
        k -= 1
    run_end[k] = end
    run_job[k] = j
    ctr[I_R] += 1


@kernel_inline
def _running_remove(run_job, run_end, ctr, end: float, j: int) -> None:
    r = ctr[I_R]
    lo, hi = 0, r
    while lo < hi:
        mid = (lo + hi) >> 1
        if run_end[mid] < end:
            lo = mid + 1
        else:
            hi = mid
    k = lo
    while run_job[k] != j:
        k += 1
    for i in range(k, r - 1):
        run_end[i] = run_end[i + 1]
        run_job[i] = run_job[i + 1]
    ctr[I_R] = r - 1


@kernel_inline
def _enqueue(q, ctr, j: int, n: int, sizes) -> None:
    """Append job j of n cores; ``sizes`` counts the waiting jobs by cores, and its last
    entry is the fewest cores any waiting job needs (no call while even that is not free)."""
    q[ctr[I_QT]] = j
    ctr[I_QT] += 1
    ctr[I_Q] += 1
    sizes[n] += 1
    if n < sizes[-1]:
        sizes[-1] = n


@kernel_inline
def _dequeue(q, ctr, at: int, n: int, sizes) -> None:
    """Remove the queue entry at position ``at``, a job of n cores (the queue keeps its
    order, no holes)."""
    sizes[n] -= 1
    if sizes[n] == 0 and n == sizes[-1]:      # the smallest size left: the next one waiting
        top = sizes.size - 1
        k = n + 1
        while k < top and sizes[k] == 0:
            k += 1
        sizes[-1] = k
    qh = ctr[I_QH]
    if at == 0:
        ctr[I_QH] = qh + 1
    else:
        qt = ctr[I_QT]
        for k in range(qh + at, qt - 1):
            q[k] = q[k + 1]
        ctr[I_QT] = qt - 1
    ctr[I_Q] -= 1


@kernel_inline
def _pass(now, queue_fn, alloc_fn, alloc_policy, q, sizes, nd, jb, out, alloc, run, heap, ctr, clk, prof, run_job,
          run_end, qmem, amem, cand_node, cand_k, mark, rng, total, err) -> int:
    """One scheduling pass: start the jobs the queue plug-in picks; 0, or an error code."""
    while ctr[I_QT] > ctr[I_QH] and sizes[-1] <= ctr[I_FREE]:
        jobs = Jobs(readonly(jb[0]), readonly(jb[1]), readonly(jb[2]), readonly(jb[3]), readonly(jb[4]))
        nodes = Nodes(readonly(nd[0]), readonly(nd[3]), readonly(nd[4]), readonly(nd[5]), readonly(nd[6]), ctr[I_FREE],
                      total, ctr[I_RVER])
        at = queue_fn(now, readonly(q[ctr[I_QH]:ctr[I_QT]]), readonly(run_job[:ctr[I_R]]),
                      readonly(run_end[:ctr[I_R]]), jobs, nodes, qmem)
        if at == -1:
            return 0
        size = ctr[I_QT] - ctr[I_QH]
        if at < 0 or at >= size:
            return _fail(err, BAD_POSITION, now, at, size, -1)
        j = q[ctr[I_QH] + at]
        n = jb[1][j]
        if n > ctr[I_FREE]:
            return _fail(err, NO_FIT, now, at, j, ctr[I_FREE])
        if alloc_policy >= 0:      # a built-in allocation policy
            if ctr[I_BY_COUNT]:    # fits exactly when its cores are free (simulator.new_state)
                taken = take_in_order(j, alloc_policy, nd, jb, alloc, ctr, clk)
            else:
                m = allocation.choose(alloc_policy, n, jb[2][j], jb[3][j], nd[4], nd[5], nd[6], nd[3], nd[7],
                                      nd[9], nd[10], rng, cand_node, cand_k)
                if m < 0:
                    return _fail(err, NO_FIT, now, at, j, _room(j, nd, jb))
                taken = take_chosen(j, m, cand_node, cand_k, nd, jb, alloc, ctr, clk)
        else:
            if _room(j, nd, jb) < n:
                return _fail(err, NO_FIT, now, at, j, _room(j, nd, jb))
            m = alloc_fn(now, j, jobs, nodes, cand_node, cand_k, amem)
            if m == -1:
                return 0           # the allocation keeps it waiting: the pass ends
            code = _check_alloc(j, m, now, nd, jb, cand_node, cand_k, mark, err)
            if code != 0:
                return code
            taken = take_chosen(j, m, cand_node, cand_k, nd, jb, alloc, ctr, clk)
        started(j, now, taken, jb, out, run, heap, ctr, clk, prof, PLUGIN)
        _running_insert(run_job, run_end, ctr, out[6][j], j)
        _dequeue(q, ctr, at, n, sizes)
    return 0


@kernel
def _run(queue_fn, alloc_fn, alloc_policy, cl_mask, total_cores, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof,
         q, sizes, run_job, run_end, qmem, amem, cand_node, cand_k, mark, rng, err) -> int:
    """Run every event (0) or stop at a plug-in's impossible choice (its code, details in err)."""
    submit = jb[0]
    n_jobs = submit.size
    ht, hk, hd = heap
    ia = 0
    while True:
        ta = submit[ia] if ia < n_jobs else np.inf
        th = ht[0] if ctr[I_HSIZE] > 0 else np.inf
        t = min(ta, th)
        if t == np.inf:
            break
        _advance_clocks(t, clk)
        trigger = False
        while ia < n_jobs and submit[ia] == t:       # priority 1: arrivals
            _enqueue(q, ctr, ia, jb[1][ia], sizes)
            ia += 1
            trigger = True
        while ctr[I_HSIZE] > 0 and ht[0] == t:
            _t, ek, d, ctr[I_HSIZE] = events.pop(ht, hk, hd, ctr[I_HSIZE])
            kind = events.key_kind(ek)
            if kind == events.COMPUTE_END or kind == events.KILL:
                finish_job(d, t, kind == events.KILL, nd, jb, out, alloc, run, ctr, acc, clk, prof, PLUGIN)
                _running_remove(run_job, run_end, ctr, out[6][d], d)
                trigger = True
        if trigger:
            code = _pass(t, queue_fn, alloc_fn, alloc_policy, q, sizes, nd, jb, out, alloc, run, heap, ctr, clk, prof,
                         run_job, run_end, qmem, amem, cand_node, cand_k, mark, rng, total_cores, err)
            if code != 0:
                return code
        _record_state(ctr, clk, total_cores, cl_mask)
    return 0


def simulate(f, queue_fn, alloc_fn, alloc_policy: int, cl_mask: int, rng_seed: int, names: tuple[str, str]) -> Result:
    """Simulate the flow ``f`` (``cluster.Flow``) with the queue plug-in ``queue_fn`` and
    either the allocation plug-in ``alloc_fn`` (``alloc_policy = -1``) or the built-in
    allocation ``alloc_policy`` (an index of ``allocation.NAMES``; ``alloc_fn`` is then
    only a placeholder of the right type). ``names``: the queue and allocation as the
    spec names them, for the error message of an impossible choice (PluginError)."""
    st = new_state(f.submit, f.cores_req, f.mem_req, f.disk_req, f.estimate, f.tau, f.node_cores, f.node_mem,
                   f.node_disk, f.node_speed, max(alloc_policy, 0), rng_seed, PLUGIN)
    nj = f.submit.size
    if alloc_policy < 0:
        st.ctr[I_BY_COUNT] = 0
    room = min(nj, st.total) + 1      # a running job holds at least one core
    err = np.zeros(6)
    sizes = np.zeros(st.total + 2, np.int64)    # waiting jobs by cores; last: the fewest cores waiting
    sizes[-1] = st.total + 1
    code = _run(queue_fn, alloc_fn, alloc_policy, cl_mask, st.total, st.nd, st.jb, st.out, st.alloc, st.run, st.heap,
                st.ctr, st.acc, st.clk, st.prof, st.q, sizes, np.zeros(room, np.int64), np.zeros(room), np.zeros(64 + nj),
                np.zeros(64 + nj), st.cand_node, st.cand_k, np.zeros(st.nd[0].size, np.int64), st.rng, err)
    if code:
        raise PluginError(describe_error(err, f, names))
    return result_of(st)


def describe_error(err: np.ndarray, f, names: tuple[str, str]) -> str:
    """One line: which plug-in, at what time, chose what, and why that is impossible."""
    code, now = int(err[0]), float(err[1])
    a, b, c, d = (int(x) for x in err[2:6])
    queue, alloc_name = names

    def job(j: int) -> str:
        return f"job {int(f.job_id[j])} ({int(f.cores_req[j])} processes)"

    if code == BAD_POSITION:
        return (f"queue plug-in {queue} returned {a} at t = {now!r} s: not a position in the queue "
                f"(0..{b - 1}) nor -1")
    if code == NO_FIT:
        return (f"queue plug-in {queue} chose position {a}, {job(b)}, at t = {now!r} s: it does not fit now "
                f"(the nodes can take {min(c, int(f.cores_req[b]))} of its processes)")
    head = f"allocation plug-in {alloc_name} for {job(a)} at t = {now!r} s"
    if code == BAD_COUNT:
        return f"{head} returned {b}: not a node count in 1..{c} nor -1"
    if code == BAD_NODE:
        return f"{head} gave entry {b} the node {c}: not a node index (0..{len(f.node_cores) - 1})"
    if code == BAD_PROCS:
        return f"{head} gave node {b} {c} processes (at least 1 each)"
    if code == TWICE:
        return f"{head} listed node {b} twice (again at entry {c})"
    if code == OVER:
        return f"{head} gave node {b} {c} processes; it can take {d} now (busy)"
    if code == BAD_TOTAL:
        return f"{head} placed {b} processes; the job has {c}"
    return f"plug-in error code {code} at t = {now!r} s"
