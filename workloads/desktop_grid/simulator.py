"""Discrete-event kernel of the desktop grid (numba, no Python per event).

Event sources, each with one pending time in a tournament tree (a fixed-size min-heap):
slot 0 = next arrival (merged Poisson process of all classes), slot 1 = next machine
availability change (a precomputed, policy-independent timeline), slot 2 + j = the
completion of machine j's task. Ties at equal times go to the lower slot: arrival, then
availability change, then completions by machine number, so every run is reproducible.

The LP is not solved in the kernel: the availability timeline is known before the run,
so :mod:`.policies` solves the LP once per distinct (available set, CPU estimates) key and
the kernel looks up the eligibility matrix of the key in force (``elig[key, i, j]``).

Tasks wait in one binary heap per class ordered by (queue time, arrival number); the
queue time is the original arrival (a resubmitted task returns near the head, our rule) or,
with ``requeue_now``, the resubmission time. W always uses the original arrival.

CPU availability: a constant ``a[j]`` (service time ``w / (mu_nom * a)``) or a Markov chain
over ``levels`` stepped every ``period`` time units (stay with ``stay``, else re-draw the
level from the machine's weights). The chain path of machine j is defined by a
counter-based hash of ``chain_key[j]`` (jump number n -> two uniforms), so it is the same
for every policy however often it is queried; a task's remaining work falls at
``mu_nom * level`` and its completion is found by walking the chain's jumps up to the
completion or to the machine's next failure, whichever is first.
"""
from __future__ import annotations

import numpy as np
from numba.np.random.distributions import random_exponential, random_uniform
from numba.np.random.generator_core import next_double

from ..kernel_support.jit import kernel, kernel_without_refcount
from .choices import FCFS, GCMU, LPAS, POLICY_CODE, PST, WORK_CODE, WORK_DET, WORK_EXP, WORK_UNIF  # handed on


# trace kinds (tests)
TR_ARRIVE, TR_START, TR_COMPLETE, TR_QUEUE, TR_FAIL, TR_REPAIR = 0, 1, 2, 3, 4, 5

# stop codes
STOP_HORIZON, STOP_UNSTABLE, STOP_PLUGIN = 0, 1, 2

# indices of the integer statistics vector returned by the kernel (the last three: the machine,
# the class and what is wrong with a plug-in's impossible choice, written only when STOP_PLUGIN)
(ST_EVENTS, ST_ARRIVED, ST_RESUB, ST_QMAX, ST_STOP, ST_KEY, ST_NTRACE, ST_QEND,
 ST_ERR_MACHINE, ST_ERR_CHOICE, ST_ERR_WHY) = range(11)
N_STATS = 11
# what is wrong with an impossible choice
BAD_RANGE, BAD_EMPTY, BAD_ELIG = 1, 2, 3


# The helpers below never allocate, so they are compiled without reference counting
# (kernel_support/jit.py): with it, their calls kept atomic increfs and decrefs of their
# array arguments, once per event.
@kernel_without_refcount
def _hash_uniform(key, n):
    """Uniform in (0, 1] from (key, n): splitmix64 of key + n * golden ratio."""
    z = key + np.uint64(n + 1) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (np.float64(z >> np.uint64(11)) + 1.0) * (1.0 / 9007199254740992.0)


@kernel_without_refcount
def _draw_level(cdf, u):
    k = 0
    while k < cdf.shape[0] - 1 and u > cdf[k]:
        k += 1
    return k


@kernel_without_refcount
def _geometric_gap(u, stay):
    """Steps until the next re-draw: P(gap >= k + 1) = stay**k."""
    if stay <= 0.0:
        return 1
    return 1 + int(np.floor(np.log(u) / np.log(stay)))


@kernel_without_refcount
def _chain_jump(j, ch_level, ch_next, ch_n, keys, cdf, stay):
    ch_level[j] = _draw_level(cdf[j], _hash_uniform(keys[j], ch_n[j]))
    ch_next[j] += _geometric_gap(_hash_uniform(keys[j], ch_n[j] + 1), stay)
    ch_n[j] += 2


@kernel_without_refcount
def _tree_update(tree, node_t, times, size, slot):
    """Slot ``slot``'s time changed (``times[slot]``): replay its matches up to the root.

    Each node holds its winner's slot (``tree``) and time (``node_t``), so a match compares
    the winner carried up in registers with the sibling's stored time: no load depends on the
    previous level's store (reading ``times[tree[child]]`` did, which made this update a
    quarter of the kernel's time). Ties go to the left child, the lower slot, as before."""
    pos = size + slot
    t = times[slot]
    s = slot
    node_t[pos] = t
    while pos > 1:
        sib = pos ^ 1
        ts = node_t[sib]
        if ts < t or (ts == t and sib < pos):
            t = ts
            s = tree[sib]
        pos >>= 1
        tree[pos] = s
        node_t[pos] = t


@kernel_without_refcount
def _older(t_arr, t_seq, x, y):
    """Task x waited longer than task y (earlier arrival, then lower arrival number)."""
    return t_arr[x] < t_arr[y] or (t_arr[x] == t_arr[y] and t_seq[x] < t_seq[y])


# Each class's waiting tasks are an index heap (heap[i, :hsize[i]] holds task numbers) ordered
# by the tasks' own arrival time and number, read where they live: not the event heap of
# cluster/events.py, which stores a key beside each entry and holds one queue, not one per class.
@kernel_without_refcount
def _heap_push(heap, hsize, i, task, t_arr, t_seq):
    k = hsize[i]
    hsize[i] = k + 1
    while k > 0:
        parent = (k - 1) >> 1
        if _older(t_arr, t_seq, task, heap[i, parent]):
            heap[i, k] = heap[i, parent]
            k = parent
        else:
            break
    heap[i, k] = task


@kernel_without_refcount
def _heap_pop(heap, hsize, i, t_arr, t_seq):
    top = heap[i, 0]
    n = hsize[i] - 1
    hsize[i] = n
    if n > 0:
        last = heap[i, n]
        k = 0
        while True:
            c = 2 * k + 1
            if c >= n:
                break
            if c + 1 < n and _older(t_arr, t_seq, heap[i, c + 1], heap[i, c]):
                c += 1
            if _older(t_arr, t_seq, heap[i, c], last):
                heap[i, k] = heap[i, c]
                k = c
            else:
                break
        heap[i, k] = last
    return top


@kernel_without_refcount
def _machine_before(i, x, y, mu_nom, view):
    """Machine ``x`` comes before ``y`` in class ``i``'s list: faster (``mu_nom * view``),
    then lower index."""
    vx = mu_nom[i, x] * view[x]
    vy = mu_nom[i, y] * view[y]
    return vx > vy or (vx == vy and x < y)


@kernel_without_refcount
def _build_lists(elig, key, by_speed, mu_nom, view, ord_idx, ord_cnt):
    """``ord_idx[i, :ord_cnt[i]]``: the machines that may take class ``i`` under ``key``, the
    fastest first (``by_speed``; ties by index) or by index (FCFS)."""
    n, m = ord_idx.shape
    for i in range(n):
        c = 0
        for j in range(m):
            if elig[key, i, j] != 0:
                # insertion: the list is short (an LP's support) or built once (all machines)
                e = c
                while by_speed and e > 0 and _machine_before(i, j, ord_idx[i, e - 1], mu_nom, view):
                    ord_idx[i, e] = ord_idx[i, e - 1]
                    e -= 1
                ord_idx[i, e] = j
                c += 1
        ord_cnt[i] = c


@kernel_without_refcount
def _draw_work(bitgen, work_code):
    """Nominal work of a task, from ``rng.bit_generator``: numba's own ``exponential`` and
    ``uniform`` (the same draws as the Generator methods, which call these)."""
    if work_code == WORK_EXP:
        return random_exponential(bitgen, 1.0)
    if work_code == WORK_UNIF:
        return random_uniform(bitgen, 0.0, 2.0)     # (low, high - low)
    return 1.0


@kernel
def _simulate(policy, mu_nom, a_true, view0, alpha_cdf, total_rate, work_code,
              chg_time, chg_machine, chg_up, chg_key, chg_view, chg_next_same, next_down0,
              elig, init_key,
              arr_rng, work_rng, rework_rng,
              script_t, script_c, script_w, script_rework,
              use_chain, levels, stay, level_cdf, chain_keys, period,
              horizon, warmup, queue_bound, requeue_now,
              sum_w, cnt_w, busy_out, stats, trace_t, trace_kind, trace_m, trace_task, w_buf, rule=None):
    """Run one replication; see the module docstring. Fills ``sum_w``/``cnt_w`` per class,
    ``busy_out`` (busy machine-time in [warmup, end], end) and ``stats``; returns
    ``(buffer, n)``, the W of every task completed in [warmup, end] in completion order in
    ``buffer[:n]`` (``w_buf``, or a larger copy when it filled up: the count is not known
    before the run).

    ``rule``: None (the built-in ``policy``) or a plug-in dispatch rule (a numba
    first-class function, :data:`plugins.DISPATCH_SIG`) that picks the class an idle machine
    pulls; ``policy`` then only places arriving tasks (GCMU: the fastest idle machine). An
    impossible choice stops the run with ``STOP_PLUGIN``, the time in ``busy_out[2]`` and
    the machine and choice in ``stats``. With ``rule=None`` numba prunes the plug-in
    branches: the built-in kernel runs the code it ran before (and allocates two small
    arrays it does not use)."""
    n_w = 0
    n, m = mu_nom.shape
    inf = np.inf
    scripted = script_t.shape[0] > 0
    trace_cap = trace_t.shape[0]
    n_trace = 0
    cap = queue_bound + m + 2

    # tournament tree over slots 0 (arrival), 1 (availability change), 2 + j (completions)
    n_slots = 2 + m
    size = 1
    while size < n_slots:
        size *= 2
    times = np.full(size, inf)
    tree = np.zeros(2 * size, np.int64)
    node_t = np.full(2 * size, inf)      # the time of each node's winner (_tree_update)
    for s in range(size):
        tree[size + s] = s
    for node in range(size - 1, 0, -1):
        a = tree[2 * node]
        b = tree[2 * node + 1]
        tree[node] = a if times[a] <= times[b] else b

    # tasks: a pool of slots, the freed ones reused first, then fresh ones in order. The pool
    # has room for queue_bound waiting tasks (8 MB at the default), of which a run touches
    # only what it uses: a free list filled up front (np.arange) wrote all of it, 0.3 ms of
    # page faults per replication. A task's slot number has no bearing on the results.
    t_arr = np.empty(cap)      # original arrival: W
    t_key = np.empty(cap)      # queue position and waiting time D_i: t_arr, or the resubmission
    t_cls = np.empty(cap, np.int64)
    t_seq = np.empty(cap, np.int64)
    t_work = np.empty(cap)
    free = np.empty(cap, np.int64)
    n_free = 0
    n_fresh = 0
    heap = np.empty((n, cap), np.int64)
    hsize = np.zeros(n, np.int64)
    q_total = 0
    q_max = 0

    # machines
    avail = np.ones(m, np.bool_)
    busy_task = np.full(m, -1, np.int64)
    busy_since = np.zeros(m)
    idle_since = np.zeros(m)
    is_idle = np.ones(m, np.bool_)
    view = view0.copy()
    next_down = next_down0.copy()
    busy_acc = 0.0

    # CPU chains
    ch_level = np.zeros(m, np.int64)
    ch_next = np.zeros(m, np.int64)
    ch_n = np.zeros(m, np.int64)
    if use_chain:
        for j in range(m):
            ch_level[j] = _draw_level(level_cdf[j], _hash_uniform(chain_keys[j], np.int64(0)))
            ch_next[j] = _geometric_gap(_hash_uniform(chain_keys[j], np.int64(1)), stay)
            ch_n[j] = 2

    to_start = np.empty(m, np.int64)
    # The machines an arriving task of class i may go to under the key in force, fastest
    # first (FCFS: by index); used where that is not every machine (an LP policy's support,
    # about a quarter of them): the scan stops at the first idle one and any idle ones as
    # fast, where testing every machine's eligibility was a branch mispredicted on most of
    # them. Rebuilt at each new key; an estimate (view) only changes with the key under an
    # LP policy, and the other policies never use the lists (every machine eligible).
    by_speed = policy != FCFS
    ord_idx = np.empty((n, m), np.int64)
    ord_cnt = np.zeros(n, np.int64)
    _build_lists(elig, init_key, by_speed, mu_nom, view, ord_idx, ord_cnt)
    head_time = np.full(n, inf)       # the plug-in's view of each class's oldest task
    head_seq = np.full(n, -1, np.int64)
    key = init_key
    events = 0
    arrived = 0
    resub = 0
    n_script = 0
    n_rework = 0
    stop = STOP_HORIZON

    # The draws go through the bit generators with numba's own distribution functions, the
    # ones its Generator methods call (the same numbers): a method call increfs and decrefs
    # the Generator's meminfo, two atomic operations per draw that were ~10% of the kernel.
    arr_bg = arr_rng.bit_generator
    work_bg = work_rng.bit_generator
    rework_bg = rework_rng.bit_generator

    # first arrival and first availability change
    if scripted:
        times[0] = script_t[0]
    else:
        times[0] = random_exponential(arr_bg, 1.0 / total_rate)
    # np.int64, not a literal: numba compiles a callee once more for every literal argument
    _tree_update(tree, node_t, times, size, np.int64(0))
    if chg_time.shape[0] > 0:
        times[1] = chg_time[0]
        _tree_update(tree, node_t, times, size, np.int64(1))
    c_ptr = 0

    while True:
        slot = tree[1]
        now = times[slot]
        if now > horizon:
            break
        events += 1
        task = -1
        n_start = 0
        if slot == 0:
            # ---------------------------------------------------------------- arrival
            if scripted:
                cls = script_c[n_script]
                w = script_w[n_script]
                n_script += 1
                times[0] = script_t[n_script] if n_script < script_t.shape[0] else inf
            else:
                u = next_double(arr_bg)
                cls = 0
                while cls < n - 1 and u > alpha_cdf[cls]:
                    cls += 1
                w = _draw_work(work_bg, work_code)
                times[0] = now + random_exponential(arr_bg, 1.0 / total_rate)
            _tree_update(tree, node_t, times, size, np.int64(0))
            if n_free > 0:
                n_free -= 1
                task = free[n_free]
            else:
                task = n_fresh
                n_fresh += 1
            t_arr[task] = now
            t_key[task] = now
            t_cls[task] = cls
            t_seq[task] = arrived
            t_work[task] = w
            arrived += 1
            if n_trace < trace_cap:
                trace_t[n_trace] = now
                trace_kind[n_trace] = TR_ARRIVE
                trace_m[n_trace] = -1
                trace_task[n_trace] = t_seq[task]
                n_trace += 1
        elif slot == 1:
            # ------------------------------------------------------- availability change
            j = chg_machine[c_ptr]
            new_key = chg_key[c_ptr] != key
            key = chg_key[c_ptr]
            if chg_up[c_ptr]:
                avail[j] = True
                view[j] = chg_view[c_ptr]
                next_down[j] = chg_next_same[c_ptr]
                is_idle[j] = True
                idle_since[j] = now
            else:
                avail[j] = False
                is_idle[j] = False
                if busy_task[j] >= 0:
                    task = busy_task[j]
                    busy_task[j] = -1
                    busy_acc += max(0.0, now - max(busy_since[j], warmup))
                    times[2 + j] = inf
                    _tree_update(tree, node_t, times, size, 2 + j)
                    resub += 1
                    if requeue_now:
                        t_key[task] = now
                    if scripted:
                        t_work[task] = script_rework[n_rework]
                        n_rework += 1
                    else:
                        t_work[task] = _draw_work(rework_bg, work_code)
            if n_trace < trace_cap:
                trace_t[n_trace] = now
                trace_kind[n_trace] = TR_REPAIR if chg_up[c_ptr] else TR_FAIL
                trace_m[n_trace] = j
                trace_task[n_trace] = t_seq[task] if task >= 0 else -1
                n_trace += 1
            if new_key:
                _build_lists(elig, key, by_speed, mu_nom, view, ord_idx, ord_cnt)
            c_ptr += 1
            times[1] = chg_time[c_ptr] if c_ptr < chg_time.shape[0] else inf
            _tree_update(tree, node_t, times, size, np.int64(1))
        else:
            # ---------------------------------------------------------------- completion
            j = slot - 2
            done = busy_task[j]
            busy_task[j] = -1
            times[slot] = inf      # the tree is updated once the machine's next start is known
            busy_acc += max(0.0, now - max(busy_since[j], warmup))
            if now >= warmup:
                sum_w[t_cls[done]] += now - t_arr[done]
                if n_w == w_buf.shape[0]:
                    grown = np.empty(2 * w_buf.shape[0] + 64)
                    grown[:n_w] = w_buf
                    w_buf = grown
                w_buf[n_w] = now - t_arr[done]
                n_w += 1
                cnt_w[t_cls[done]] += 1
            if n_trace < trace_cap:
                trace_t[n_trace] = now
                trace_kind[n_trace] = TR_COMPLETE
                trace_m[n_trace] = j
                trace_task[n_trace] = t_seq[done]
                n_trace += 1
            free[n_free] = done
            n_free += 1
            is_idle[j] = True
            idle_since[j] = now

        # ------------------------------------------------ dispatch the arriving/resubmitted task
        if task >= 0:
            i = t_cls[task]
            best = -1
            if ord_cnt[i] == m:
                # every machine: in index order, each idle one compared (faster here than
                # the list for Gcmu, whose fastest machines are mostly busy)
                for j in range(m):
                    if not is_idle[j]:
                        continue
                    if best < 0:
                        best = j
                    elif policy == FCFS:
                        if idle_since[j] < idle_since[best]:
                            best = j
                    else:
                        mj = mu_nom[i, j] * view[j]
                        mb = mu_nom[i, best] * view[best]
                        if mj > mb or (mj == mb and idle_since[j] < idle_since[best]):
                            best = j
            else:
                # the same choice (fastest, then longest idle, then lowest index) from the list
                for e in range(ord_cnt[i]):
                    j = ord_idx[i, e]
                    if not is_idle[j]:
                        continue
                    if best < 0:
                        best = j
                    elif not by_speed:
                        if idle_since[j] < idle_since[best]:
                            best = j
                    elif mu_nom[i, j] * view[j] < mu_nom[i, best] * view[best]:
                        break              # slower than the fastest idle one: so is the rest
                    elif idle_since[j] < idle_since[best]:
                        best = j
            if best >= 0:
                is_idle[best] = False
                busy_task[best] = task
                to_start[n_start] = best
                n_start += 1
            else:
                _heap_push(heap, hsize, i, task, t_key, t_seq)
                q_total += 1
                if q_total > q_max:
                    q_max = q_total
                if n_trace < trace_cap:
                    trace_t[n_trace] = now
                    trace_kind[n_trace] = TR_QUEUE
                    trace_m[n_trace] = -1
                    trace_task[n_trace] = t_seq[task]
                    n_trace += 1
                if q_total > queue_bound:
                    stop = STOP_UNSTABLE
                    break

        # ------------------------------------------------ idle machines pull, then starts
        # Which idle machines may pull now: after a completion only that machine; after a
        # change with an LP policy every idle machine (eligibility may have changed);
        # after a repair otherwise only the repaired machine. Index order.
        lo = 0
        hi = -1
        if slot >= 2:
            lo = slot - 2
            hi = slot - 2
        elif slot == 1:
            jc = chg_machine[c_ptr - 1]
            if policy == LPAS:
                lo = 0
                hi = m - 1
            elif chg_up[c_ptr - 1]:
                lo = jc
                hi = jc
        for j in range(lo, hi + 1):
            if not is_idle[j] or q_total == 0:
                continue
            bi = np.int64(-1)  # np.int64, not the literal -1: one compile of _heap_pop
            bkey = 0.0
            if rule is None:
                for i in range(n):
                    if hsize[i] == 0 or elig[key, i, j] == 0:
                        continue
                    head = heap[i, 0]
                    if policy == FCFS:
                        if bi < 0 or _older(t_key, t_seq, head, heap[bi, 0]):
                            bi = i
                    else:
                        k = mu_nom[i, j] * view[j]
                        if policy != PST:
                            k *= now - t_key[head]
                        if bi < 0 or k > bkey:
                            bi = i
                            bkey = k
            else:
                # ask the plug-in only when machine j has something to pull
                any_waiting = False
                for i in range(n):
                    if hsize[i] > 0:
                        head_time[i] = t_key[heap[i, 0]]
                        head_seq[i] = t_seq[heap[i, 0]]
                        any_waiting = any_waiting or elig[key, i, j] != 0
                    else:
                        head_time[i] = inf
                        head_seq[i] = -1
                if any_waiting:
                    bi = rule(j, now, hsize, head_time, head_seq, mu_nom, view, elig[key])
                    why = 0
                    if bi < 0 or bi >= n:
                        why = BAD_RANGE
                    elif hsize[bi] == 0:
                        why = BAD_EMPTY
                    elif elig[key, bi, j] == 0:
                        why = BAD_ELIG
                    if why:
                        stop = STOP_PLUGIN
                        stats[ST_ERR_MACHINE] = j
                        stats[ST_ERR_CHOICE] = bi
                        stats[ST_ERR_WHY] = why
                        busy_out[2] = now
                        break
            if bi >= 0:
                is_idle[j] = False
                busy_task[j] = _heap_pop(heap, hsize, bi, t_key, t_seq)
                q_total -= 1
                to_start[n_start] = j
                n_start += 1

        if rule is not None and stop == STOP_PLUGIN:
            break

        # start every machine that got a task at this event
        for s_k in range(n_start):
            j = to_start[s_k]
            tk = busy_task[j]
            busy_since[j] = now
            rate = mu_nom[t_cls[tk], j]
            if not use_chain:
                times[2 + j] = now + t_work[tk] / (rate * a_true[j])
            else:
                # bring the chain to now, then walk its jumps until done or failure
                while ch_next[j] * period <= now:
                    _chain_jump(j, ch_level, ch_next, ch_n, chain_keys, level_cdf, stay)
                rem = t_work[tk]
                tcur = now
                while True:
                    seg_end = ch_next[j] * period
                    r = rate * levels[ch_level[j]]
                    tdone = tcur + rem / r
                    if tdone <= seg_end:
                        break
                    if seg_end > next_down[j]:
                        tdone = inf      # interrupted by the failure first
                        break
                    rem -= r * (seg_end - tcur)
                    tcur = seg_end
                    _chain_jump(j, ch_level, ch_next, ch_n, chain_keys, level_cdf, stay)
                times[2 + j] = tdone
            _tree_update(tree, node_t, times, size, 2 + j)
            if n_trace < trace_cap:
                trace_t[n_trace] = now
                trace_kind[n_trace] = TR_START
                trace_m[n_trace] = j
                trace_task[n_trace] = t_seq[tk]
                n_trace += 1
        # a completed machine that took no new task: one tree update instead of two when it did
        if slot >= 2 and busy_task[slot - 2] < 0:
            _tree_update(tree, node_t, times, size, slot)

    # busy time of tasks still running at the end
    end = min(now, horizon) if stop != STOP_HORIZON else horizon
    for j in range(m):
        if busy_task[j] >= 0:
            busy_acc += max(0.0, end - max(busy_since[j], warmup))
    busy_out[0] = busy_acc
    busy_out[1] = end
    stats[ST_EVENTS] = events
    stats[ST_ARRIVED] = arrived
    stats[ST_RESUB] = resub
    stats[ST_QMAX] = q_max
    stats[ST_STOP] = stop
    stats[ST_KEY] = key
    stats[ST_NTRACE] = n_trace
    stats[ST_QEND] = q_total
    return w_buf, n_w
