"""The packet-switched network (spec "Network") as numba code.

Model: a message of ``q`` bytes is ``Np = ceil(q / (g - h))`` packets of ``g`` bytes. Every
device (node or switch) has one input queue served by a routing stage (service
``t_routing`` s); every directed link is a single-server FIFO channel (service
``g / b`` s per packet). All packets of a message enter the source node's input queue at
the send time; after routing at a device a packet joins the output queue of the link the
routing table names, or, at its destination node, is delivered. A message arrives when
its last packet has been routed at the destination node.

Events (spec priorities): ``LINK_END`` (2) end of a packet's transmission on a link,
``ROUTING_END`` (3) end of a packet's routing on a device; ``COMPUTE_END`` (4) belongs
to the SPMD processes (``spmd.py``). The heap orders by (time, priority, sequence), the
sequence being a counter, so equal events keep insertion order and runs are
reproducible. An event's payload is the device or link whose server finishes; the
packet is the one that server holds.

State (plain arrays, grown by the Python side when a kernel returns ``NEED_ROOM``):

- ``dev`` int64[3, devices]: packet in routing (-1 idle), head and tail of the input queue;
- ``lnk`` int64[3, links]: packet in transmission (-1 idle), head and tail of the output queue;
- ``pk`` int64[3, cap]: a queue record's message, packet count and next record. The
  ``Np`` packets of a new message are one record with count ``Np`` in the source's
  input queue (FIFO is unchanged: they entered together); a packet gets its own record
  when it starts routing, so memory grows with packets in flight, not with message sizes;
- ``msg`` int64[5, mcap]: destination node, packets not yet delivered, receiving
  process (-1 for a bare message), tag (iteration, or the bare message's index), next
  free; ``msgf`` float64[2, mcap]: send time and contention-free time (s);
- ``heap``: ``events``' heap (time float64, key int64, data int64);
- ``ctr`` int64 counters, ``acc`` float64 sums (the ``C_*`` and ``A_*`` constants).

The contention a message met is its measured time minus its idle-network time
(:func:`idle_time`, the spec's formula), summed in ``acc``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import events
from ..kernel_support.jit import kernel_without_refcount as kernel
from .topology import Topology

LINK_END, ROUTING_END, COMPUTE_END = events.LINK_END, events.ROUTING_END, events.COMPUTE_END

# record rows
BUSY, QH, QT = 0, 1, 2
PK_MSG, PK_CNT, PK_NEXT = 0, 1, 2
M_DST, M_LEFT, M_PROC, M_TAG, M_NEXT = 0, 1, 2, 3, 4
MF_TSEND, MF_FREE = 0, 1
# ctr slots
C_HSIZE, C_SEQ, C_PKFREE, C_PKUSED, C_MFREE, C_MUSED, C_EVENTS, C_DELIVERED = range(8)
N_CTR = 8
# acc slots: message time, idle-network time, messages, receive blocking, receives, packets
A_MSGTIME, A_FREETIME, A_MSGS, A_BLOCK, A_RECVS, A_PACKETS = range(6)
N_ACC = 6
#: a kernel returns this when a record pool may run out; the caller grows it and calls again
NEED_ROOM = 1


# ------------------------------------------------------------------ heap
@kernel
def heap_push(heap, ctr, time: float, prio: int, data: int) -> None:
    """Push an event of priority ``prio`` (here the kind is the priority) on ``events``' heap."""
    ht, hk, hd = heap
    ctr[C_HSIZE] = events.push(ht, hk, hd, ctr[C_HSIZE], time, events.key(prio, ctr[C_SEQ], prio), data)
    ctr[C_SEQ] += 1


@kernel
def heap_pop(heap, ctr):
    """Remove the first event; returns (time, priority, data)."""
    ht, hk, hd = heap
    t, k, d, ctr[C_HSIZE] = events.pop(ht, hk, hd, ctr[C_HSIZE])
    return t, events.key_priority(k), d


# ------------------------------------------------------------------ records
@kernel
def _pk_alloc(pk, ctr) -> int:
    r = ctr[C_PKFREE]
    ctr[C_PKFREE] = pk[PK_NEXT, r]
    ctr[C_PKUSED] += 1
    return r


@kernel
def _pk_free(pk, ctr, r: int) -> None:
    pk[PK_NEXT, r] = ctr[C_PKFREE]
    ctr[C_PKFREE] = r
    ctr[C_PKUSED] -= 1


@kernel
def _append(q, owner: int, pk, r: int) -> None:
    """Append record r to the FIFO of server ``owner`` (rows QH, QT of ``q``)."""
    pk[PK_NEXT, r] = -1
    if q[QT, owner] < 0:
        q[QH, owner] = r
    else:
        pk[PK_NEXT, q[QT, owner]] = r
    q[QT, owner] = r


# ------------------------------------------------------------------ servers
@kernel
def start_routing(d: int, t: float, t_routing: float, dev, pk, heap, ctr) -> None:
    """If device d's router is idle and its queue is not, start routing the head packet."""
    if dev[BUSY, d] >= 0 or dev[QH, d] < 0:
        return
    r = dev[QH, d]
    if pk[PK_CNT, r] > 1:           # split one packet off a message's train
        pk[PK_CNT, r] -= 1
        p = _pk_alloc(pk, ctr)
        pk[PK_MSG, p] = pk[PK_MSG, r]
        pk[PK_CNT, p] = 1
    else:
        p = r
        dev[QH, d] = pk[PK_NEXT, r]
        if dev[QH, d] < 0:
            dev[QT, d] = -1
    dev[BUSY, d] = p
    heap_push(heap, ctr, t + t_routing, np.int64(ROUTING_END), d)  # not the literal: one compile


@kernel
def start_link(l: int, t: float, link_time, lnk, pk, heap, ctr) -> None:
    """If link l is idle and has a packet waiting, start transmitting it."""
    if lnk[BUSY, l] >= 0 or lnk[QH, l] < 0:
        return
    p = lnk[QH, l]
    lnk[QH, l] = pk[PK_NEXT, p]
    if lnk[QH, l] < 0:
        lnk[QT, l] = -1
    lnk[BUSY, l] = p
    heap_push(heap, ctr, t + link_time[l], np.int64(LINK_END), l)


@kernel
def idle_time(src: int, dst: int, npk: int, t_routing: float, next_link, link_dst, link_time) -> float:
    """The spec's idle-network time of a message of ``npk`` packets from src to dst (s):
    sum of g/b over the path + (K+1) t_routing + (Np-1) max(t_routing, max g/b)."""
    total = t_routing
    slowest = t_routing
    d = src
    while d != dst:
        l = next_link[d, dst]
        total += link_time[l] + t_routing
        slowest = max(slowest, link_time[l])
        d = link_dst[l]
    return total + (npk - 1) * slowest


@kernel
def inject(t: float, src: int, dst: int, npk: int, proc: int, tag: int, t_routing: float, next_link, link_dst,
           link_time, dev, pk, msg, msgf, heap, ctr, acc) -> None:
    """Send a message of ``npk`` packets from node src to node dst at time t (room assumed)."""
    m = ctr[C_MFREE]
    ctr[C_MFREE] = msg[M_NEXT, m]
    ctr[C_MUSED] += 1
    msg[M_DST, m] = dst
    msg[M_LEFT, m] = npk
    msg[M_PROC, m] = proc
    msg[M_TAG, m] = tag
    msgf[MF_TSEND, m] = t
    msgf[MF_FREE, m] = idle_time(src, dst, npk, t_routing, next_link, link_dst, link_time)
    r = _pk_alloc(pk, ctr)
    pk[PK_MSG, r] = m
    pk[PK_CNT, r] = npk
    _append(dev, src, pk, r)
    acc[A_PACKETS] += npk
    start_routing(src, t, t_routing, dev, pk, heap, ctr)


@kernel
def packet_event(t: float, prio: int, data: int, t_routing: float, next_link, link_dst, link_time, dev, lnk, pk,
                 msg, msgf, heap, ctr, acc) -> int:
    """Handle a LINK_END or ROUTING_END; returns the message that arrived with it, or -1.

    The caller reads the arrived message's ``msg`` fields and then frees it with
    :func:`free_message`.
    """
    ctr[C_EVENTS] += 1
    if prio == LINK_END:
        l = data
        p = lnk[BUSY, l]
        lnk[BUSY, l] = -1
        d2 = link_dst[l]
        _append(dev, d2, pk, p)
        start_routing(d2, t, t_routing, dev, pk, heap, ctr)
        start_link(l, t, link_time, lnk, pk, heap, ctr)
        return -1
    d = data
    p = dev[BUSY, d]
    dev[BUSY, d] = -1
    m = pk[PK_MSG, p]
    dst = msg[M_DST, m]
    arrived = -1
    if d == dst:
        _pk_free(pk, ctr, p)
        msg[M_LEFT, m] -= 1
        if msg[M_LEFT, m] == 0:
            arrived = m
            ctr[C_DELIVERED] += 1
            acc[A_MSGTIME] += t - msgf[MF_TSEND, m]
            acc[A_FREETIME] += msgf[MF_FREE, m]
            acc[A_MSGS] += 1.0
    else:
        l = next_link[d, dst]
        _append(lnk, l, pk, p)
        start_link(l, t, link_time, lnk, pk, heap, ctr)
    start_routing(d, t, t_routing, dev, pk, heap, ctr)
    return arrived


@kernel
def free_message(m: int, msg, ctr) -> None:
    msg[M_NEXT, m] = ctr[C_MFREE]
    ctr[C_MFREE] = m
    ctr[C_MUSED] -= 1


@kernel
def room(pk, msg, ctr, messages: int) -> bool:
    """Whether ``messages`` more messages (a message and a packet-train record each) plus
    two packet splits fit in the pools now."""
    return (pk.shape[1] - ctr[C_PKUSED] >= messages + 2) and (msg.shape[1] - ctr[C_MUSED] >= messages + 1)


# ------------------------------------------------------------------ state (Python side)
@dataclass
class NetState:
    """The arrays of one network simulation (see module doc); ``grow`` doubles the pools."""

    t_routing: float
    next_link: np.ndarray
    link_dst: np.ndarray
    link_time: np.ndarray
    dev: np.ndarray
    lnk: np.ndarray
    pk: np.ndarray
    msg: np.ndarray
    msgf: np.ndarray
    heap: tuple
    ctr: np.ndarray
    acc: np.ndarray

    @property
    def topo_args(self) -> tuple:
        return self.t_routing, self.next_link, self.link_dst, self.link_time

    def grow(self, need_messages: int = 0) -> None:
        """Double the record pools (more if ``need_messages`` asks), keeping free lists valid."""
        self.pk = _grow_pool(self.pk, PK_NEXT, self.ctr, C_PKFREE, 2 * need_messages + 16)
        self.msg = _grow_pool(self.msg, M_NEXT, self.ctr, C_MFREE, need_messages + 16)
        if self.msgf.shape[1] < self.msg.shape[1]:
            f = np.zeros((self.msgf.shape[0], self.msg.shape[1]))
            f[:, :self.msgf.shape[1]] = self.msgf
            self.msgf = f

    def grow_heap(self, capacity: int) -> None:
        if capacity > self.heap[0].size:
            n = self.heap[0].size
            new = (np.empty(capacity), np.empty(capacity, np.int64), np.empty(capacity, np.int64))
            for a, b in zip(new, self.heap):
                a[:n] = b
            self.heap = new


def _grow_pool(pool: np.ndarray, next_row: int, ctr: np.ndarray, free_slot: int, extra: int) -> np.ndarray:
    old = pool.shape[1]
    cap = max(2 * old, old + extra)
    new = np.zeros((pool.shape[0], cap), np.int64)
    new[:, :old] = pool
    new[next_row, old:cap - 1] = np.arange(old + 1, cap)
    new[next_row, cap - 1] = ctr[free_slot]       # old free list continues after the new slots
    ctr[free_slot] = old
    return new


def new_state(topo: Topology, packet_size: float = 1024.0, t_routing: float = 1e-6, pool: int = 1024,
              heap_capacity: int = 0) -> NetState:
    """Idle network state for ``topo``; a link's per-packet time is ``packet_size / b`` (0 if b is inf)."""
    if not packet_size > 0:
        raise ValueError(f"packet_size must be > 0 bytes, got {packet_size}")
    if not t_routing >= 0:
        raise ValueError(f"t_routing must be >= 0 s, got {t_routing}")
    link_time = np.where(np.isinf(topo.link_bw), 0.0, packet_size / topo.link_bw).astype(np.float64)
    ctr = np.zeros(N_CTR, np.int64)
    pk = np.zeros((3, 0), np.int64)
    msg = np.zeros((5, 0), np.int64)
    ctr[C_PKFREE] = -1
    ctr[C_MFREE] = -1
    cap = max(heap_capacity, topo.n_devices + topo.n_links + 16)
    st = NetState(float(t_routing), np.ascontiguousarray(topo.next_link, np.int64),
                  np.ascontiguousarray(topo.link_dst, np.int64), link_time,
                  np.full((3, topo.n_devices), -1, np.int64), np.full((3, topo.n_links), -1, np.int64),
                  pk, msg, np.zeros((2, 0)), (np.empty(cap), np.empty(cap, np.int64), np.empty(cap, np.int64)),
                  ctr, np.zeros(N_ACC))
    st.grow(pool)
    return st


# ------------------------------------------------------------------ bare messages
@kernel
def _run_messages(t_inject, src, dst, npk, arrival, cursor, t_routing, next_link, link_dst, link_time, dev, lnk,
                  pk, msg, msgf, heap, ctr, acc) -> int:
    n = t_inject.size
    i = cursor[0]
    ht = heap[0]
    while True:
        ti = t_inject[i] if i < n else np.inf
        th = ht[0] if ctr[C_HSIZE] > 0 else np.inf
        if ti == np.inf and th == np.inf:
            break
        if ti <= th:                    # injections first at equal times (priority 1)
            if not room(pk, msg, ctr, np.int64(1)):  # np.int64, not literals: one compile each
                cursor[0] = i
                return NEED_ROOM
            inject(ti, src[i], dst[i], npk[i], np.int64(-1), i, t_routing, next_link, link_dst, link_time, dev, pk, msg,
                   msgf, heap, ctr, acc)
            i += 1
            continue
        if not room(pk, msg, ctr, np.int64(0)):
            cursor[0] = i
            return NEED_ROOM
        t, prio, data = heap_pop(heap, ctr)
        m = packet_event(t, prio, data, t_routing, next_link, link_dst, link_time, dev, lnk, pk, msg, msgf, heap,
                         ctr, acc)
        if m >= 0:
            arrival[msg[M_TAG, m]] = t
            free_message(m, msg, ctr)
    cursor[0] = i
    return 0


def simulate_messages(topo: Topology, src, dst, npackets, t_inject, packet_size: float = 1024.0,
                      t_routing: float = 1e-6) -> tuple[np.ndarray, NetState]:
    """Arrival times (s) of messages sent at ``t_inject`` (s) between nodes; no processes.

    Messages sent at the same time enter their source queues in the given order.
    Returns the arrival times and the final state (``acc``/``ctr`` hold the counts).
    """
    t_inject = np.asarray(t_inject, np.float64)
    order = np.argsort(t_inject, kind="stable")
    src = np.asarray(src, np.int64)[order]
    dst = np.asarray(dst, np.int64)[order]
    npk = np.asarray(npackets, np.int64)[order]
    if src.size and (src.min() < 0 or dst.min() < 0 or max(src.max(), dst.max()) >= topo.n_nodes):
        raise ValueError(f"message endpoints must be nodes 0..{topo.n_nodes - 1}")
    if npk.size and npk.min() < 1:
        raise ValueError("every message needs npackets >= 1")
    st = new_state(topo, packet_size, t_routing)
    arrival = np.full(src.size, np.nan)
    cursor = np.zeros(1, np.int64)
    while _run_messages(t_inject[order], src, dst, npk, arrival, cursor, st.t_routing, st.next_link, st.link_dst,
                        st.link_time, st.dev, st.lnk, st.pk, st.msg, st.msgf, st.heap, st.ctr, st.acc):
        st.grow()
    out = np.empty_like(arrival)
    out[order] = arrival
    return out, st
