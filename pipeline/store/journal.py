"""The run's journal: finished batches appended to one file, compacted into the shards later.

A sharded store cannot take a batch as a new file (a shard holds many batches), and
rewriting a shard for every batch would cost the client a file replacement per variable
per batch. So a run appends each group of finished batches to ``STORE/status/journal.bin`` (inside
the status array's folder, where zarr never lists, so no reader warns about it) as one
record (every metric, ``reason``, ``status`` and ``seed`` of those batches), and the
Writer writes the shards from it every :data:`COMPACT_SECONDS`, when the journal has grown
past :data:`COMPACT_BYTES`, when the run ends, and when a run finds a journal left by an
interrupted one.

A record is ``MAGIC``, the header and payload lengths, a CRC-32C of both, a JSON header
(the batches: cell, first replication, count) and the payload (the arrays' bytes, little
endian, in the order :func:`layout` gives). A record is valid whole or not at all: a run
killed in the middle of an append leaves a tail that fails its length or checksum, and
reading stops there (those batches run again). Nothing in the journal is visible to the
store's readers before compaction; the ``status`` written by compaction comes after the
data it describes.
"""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

from .chunkfiles import crc32c

NAME = "status/journal.bin"  # relative to the store
MAGIC = b"SSJ1"
HEAD = struct.Struct("<4sIQ4s")  # magic, header length, payload length, crc32c of header + payload
COMPACT_BYTES = 64 << 20  # a journal this large is compacted during the run (bounds the client's memory)
# A run also compacts every COMPACT_SECONDS (or ten times as long as the last compaction took,
# so compaction never takes more than a tenth of the client's time): results reach the store,
# and `show`, at most that late. SCHEDSWEEP_COMPACT_SECONDS sets another interval (tests that
# watch a running sweep's status set it short).
COMPACT_SECONDS = float(os.environ.get("SCHEDSWEEP_COMPACT_SECONDS", "10"))


class Entry(NamedTuple):
    """One batch of a record: its cell, first replication, and one array per variable."""
    cell: tuple[int, ...]
    start: int
    values: dict[str, np.ndarray]  # metrics, "reason", "status", "seed"

    @property
    def n(self) -> int:
        return len(self.values["status"])


def layout(metrics: list[tuple[str, tuple[int, ...]]]) -> list[tuple[str, np.dtype, tuple[int, ...]]]:
    """(name, dtype, shape per replication) of every array of a batch, in payload order."""
    return ([(name, np.dtype("<f8"), shape) for name, shape in metrics]
            + [("reason", np.dtype("i1"), ()), ("status", np.dtype("i1"), ()), ("seed", np.dtype("<u8"), ())])


def encode(entries: list[Entry], order: list[tuple[str, np.dtype, tuple[int, ...]]]) -> bytes:
    """One record holding ``entries``."""
    header = json.dumps([[list(map(int, e.cell)), int(e.start), int(e.n)] for e in entries]).encode()
    payload = b"".join(np.ascontiguousarray(e.values[name], dtype=dtype).tobytes()
                       for e in entries for name, dtype, _ in order)
    return HEAD.pack(MAGIC, len(header), len(payload), crc32c(header + payload)) + header + payload


def append(path: Path, record: bytes, fault_point: Any) -> None:
    """Append ``record`` to the journal at ``path`` in two writes, with a fault point between
    them (a kill there leaves the torn tail that :func:`read` must ignore).

    A stop signal's handler that arrives meanwhile waits until the record is whole
    (:func:`after_append`): a Ctrl-C never tears a record, only a SIGKILL or a power loss does."""
    global _appending
    _appending = True
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        try:
            half = len(record) // 2
            os.write(fd, record[:half])
            fault_point()
            os.write(fd, record[half:])
        finally:
            os.close(fd)
    finally:
        _appending = False
        while _deferred:
            _deferred.pop(0)()  # a stop that came meanwhile: handled now (it raises)


_appending = False  # inside append: set and read in the main thread (signal handlers run there)
_deferred: list[Callable[[], None]] = []


def after_append(action: Callable[[], None]) -> bool:
    """Run ``action`` once the record being appended is whole, and return True; if no append
    is going on, return False (the caller acts now). For signal handlers, which Python runs
    in the main thread between two of its steps, wherever the signal was delivered."""
    if not _appending:
        return False
    _deferred.append(action)
    return True


def read(path: Path, order: list[tuple[str, np.dtype, tuple[int, ...]]]) -> tuple[list[Entry], int]:
    """Every batch of the journal's valid records, in order, and the number of bytes left
    unread after the last valid record (a torn or damaged tail; 0 for a clean journal)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return [], 0
    entries: list[Entry] = []
    offset = 0
    for record_entries, end in _records(raw, order):
        entries += record_entries
        offset = end
    return entries, len(raw) - offset


def torn_batches(path: Path, order: list[tuple[str, np.dtype, tuple[int, ...]]]) -> list[tuple[list[int], int, int]] | None:
    """(cell, start, n) of the batches the unreadable tail of the journal begins with, when its
    header can still be read (a record cut short by a kill); None when nothing can be told."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    offset = 0
    for _, end in _records(raw, order):
        offset = end
    if len(raw) - offset < HEAD.size:
        return None
    magic, n_header, _, _ = HEAD.unpack_from(raw, offset)
    start = offset + HEAD.size
    if magic != MAGIC or start + n_header > len(raw):
        return None
    try:
        return [(list(cell), int(first), int(n)) for cell, first, n in json.loads(raw[start:start + n_header])]
    except (ValueError, TypeError):
        return None


def _records(raw: bytes, order: list) -> Iterator[tuple[list[Entry], int]]:
    offset = 0
    while offset + HEAD.size <= len(raw):
        magic, n_header, n_payload, stored = HEAD.unpack_from(raw, offset)
        body_start = offset + HEAD.size
        end = body_start + n_header + n_payload
        if magic != MAGIC or end > len(raw) or crc32c(raw[body_start:end]) != stored:
            return
        header = json.loads(raw[body_start:body_start + n_header])
        pos = body_start + n_header
        batch = []
        for cell, start, n in header:
            values = {}
            for name, dtype, shape in order:
                count = n * int(np.prod(shape, dtype=np.int64))
                values[name] = np.frombuffer(raw, dtype=dtype, count=count, offset=pos).reshape((n, *shape))
                pos += count * dtype.itemsize
            batch.append(Entry(tuple(cell), start, values))
        yield batch, end
        offset = end
