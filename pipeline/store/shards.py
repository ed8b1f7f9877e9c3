"""Shard files of a zarr v3 array written and verified directly (the ``sharding_indexed`` codec).

The result arrays of a store (metrics, ``status``, ``reason``, ``seed``) are sharded: one
file holds a block of cells x replications, cut into inner chunks that each carry a
CRC-32C checksum (inner codecs ``bytes``, ``zstd``, ``crc32c``), with an index at the end
of the file that carries its own (index codecs ``bytes``, ``crc32c``). zarr reads these
files and checks both checksums; this module writes them whole (a temporary file renamed
over the shard, like :mod:`pipeline.store.chunkfiles`) and reads them back telling which inner
chunks are damaged, which zarr cannot: it raises on the first bad checksum of a read.

An inner chunk is *present* in a shard (has an index entry) exactly when a batch has
written replications in it: the writer keeps chunks that hold only NaN (an ok replication
whose metrics are all undefined) instead of dropping them as zarr would, so an absent
chunk where ``status`` says a replication ran is missing data, never "all NaN".
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from . import chunkfiles
from .chunkfiles import crc32c

if TYPE_CHECKING:
    import zarr

EMPTY = np.uint64(2**64 - 1)  # the index entry of an absent inner chunk (offset and length), as zarr writes it


def supports(array: zarr.Array) -> bool:
    """Whether ``array`` has the one sharded layout :class:`ShardFiles` writes and reads."""
    try:
        from zarr.codecs import BytesCodec, Crc32cCodec, ShardingCodec, ZstdCodec
        from zarr.core.chunk_grids import RegularChunkGrid
        from zarr.core.chunk_key_encodings import DefaultChunkKeyEncoding
    except ImportError:
        return False
    meta = array.metadata
    if getattr(meta, "zarr_format", None) != 3 or len(meta.codecs) != 1 or not isinstance(meta.codecs[0], ShardingCodec):
        return False
    if not isinstance(meta.chunk_grid, RegularChunkGrid) or not isinstance(meta.chunk_key_encoding, DefaultChunkKeyEncoding):
        return False
    sharding = meta.codecs[0]
    kinds = [type(c) for c in sharding.codecs]
    little = all(c.endian is None or c.endian.value == "little" for c in (*sharding.codecs, *sharding.index_codecs)
                 if isinstance(c, BytesCodec))
    return (kinds == [BytesCodec, ZstdCodec, Crc32cCodec] and little
            and [type(c) for c in sharding.index_codecs] == [BytesCodec, Crc32cCodec]
            and sharding.index_location.value == "end" and np.dtype(array.dtype).kind in "biuf")


class ShardDamage(NamedTuple):
    """What is wrong with one shard file: ``index`` (the whole file unreadable: truncated,
    index checksum wrong) or the inner chunks whose checksum or contents are wrong."""
    index: str | None
    chunks: np.ndarray  # bool, one per inner chunk of the shard


class ShardFiles:
    """Read, verify and write whole shards of one array of a local store.

    The interface is :class:`pipeline.store.chunkfiles.ChunkFiles`' with a shard as the unit
    (``chunks`` is the shard shape), plus the per-inner-chunk ``present`` mask.
    """

    def __init__(self, root: Path, array: zarr.Array):
        import numcodecs

        self.meta = array.metadata
        sharding = self.meta.codecs[0]
        self.dir = Path(root) / array.path
        self.shape = tuple(array.shape)
        self.chunks = tuple(self.meta.chunk_grid.chunk_shape)  # the shard: the unit of a file
        self.inner = tuple(sharding.chunk_shape)
        self.per_shard = tuple(s // i for s, i in zip(self.chunks, self.inner))
        self.n_inner = int(np.prod(self.per_shard))
        self.dtype = np.dtype(array.dtype).newbyteorder("<")
        self.fill = np.asarray(self.meta.fill_value, dtype=self.dtype)
        zstd = sharding.codecs[1]
        self.zstd = numcodecs.Zstd(level=zstd.level, checksum=zstd.checksum)
        self.inner_bytes = int(np.prod(self.inner)) * self.dtype.itemsize
        self._dirs: set[Path] = set()

    def path(self, pos: tuple[int, ...]) -> Path:
        return self.dir / self.meta.encode_chunk_key(pos)

    def region(self, pos: tuple[int, ...]) -> tuple[slice, ...]:
        """The part of the array shard ``pos`` holds (cut at the array's end)."""
        return tuple(slice(p * c, min((p + 1) * c, n)) for p, c, n in zip(pos, self.chunks, self.shape))

    def grid(self) -> tuple[int, ...]:
        """Shards along each axis."""
        return tuple(-(-n // c) for n, c in zip(self.shape, self.chunks))

    def inner_slices(self, k: int) -> tuple[slice, ...]:
        """The part of a shard block inner chunk ``k`` (C order) covers."""
        idx = np.unravel_index(k, self.per_shard)
        return tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, self.inner))

    def inner_in_array(self, pos: tuple[int, ...]) -> np.ndarray:
        """Per inner chunk of shard ``pos`` (C order): whether it starts inside the array."""
        starts = [np.arange(n) * c + p * s for n, c, p, s in zip(self.per_shard, self.inner, pos, self.chunks)]
        inside = np.ones(self.per_shard, bool)
        for axis, (st, size) in enumerate(zip(starts, self.shape)):
            shape = [1] * len(self.per_shard)
            shape[axis] = -1
            inside &= (st < size).reshape(shape)
        return inside.ravel()

    def empty(self) -> np.ndarray:
        return np.full(self.chunks, self.fill, dtype=self.dtype)

    def load(self, pos: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, ShardDamage | None]:
        """Shard ``pos``: (block at the shard shape, present mask per inner chunk, damage or None).

        Damaged inner chunks read as the fill value and count as absent; a shard whose
        index is unreadable reads as all fill.
        """
        block, present = self.empty(), np.zeros(self.n_inner, bool)
        try:
            raw = self.path(pos).read_bytes()
        except FileNotFoundError:
            return block, present, None
        index, problem = self._index(raw)
        if index is None:
            return block, present, ShardDamage(problem, np.ones(self.n_inner, bool))
        bad = np.zeros(self.n_inner, bool)
        for k in range(self.n_inner):
            offset, length = int(index[k, 0]), int(index[k, 1])
            if index[k, 0] == EMPTY and index[k, 1] == EMPTY:
                continue
            chunk = self._decode(raw, offset, length)
            if chunk is None:
                bad[k] = True
                continue
            block[self.inner_slices(k)] = chunk
            present[k] = True
        return block, present, ShardDamage(None, bad) if bad.any() else None

    def load_frames(self, pos: tuple[int, ...]) -> tuple[list[bytes | None], ShardDamage | None]:
        """Shard ``pos`` as its inner chunks' encoded bytes (checksum included and verified; None:
        absent or damaged), so a rewrite copies the chunks it does not change instead of
        decoding and encoding them again."""
        frames: list[bytes | None] = [None] * self.n_inner
        try:
            raw = self.path(pos).read_bytes()
        except FileNotFoundError:
            return frames, None
        index, problem = self._index(raw)
        if index is None:
            return frames, ShardDamage(problem, np.ones(self.n_inner, bool))
        bad = np.zeros(self.n_inner, bool)
        for k in range(self.n_inner):
            if index[k, 0] == EMPTY and index[k, 1] == EMPTY:
                continue
            offset, length = int(index[k, 0]), int(index[k, 1])
            frame = raw[offset:offset + length]
            if length < 4 or crc32c(frame[:-4]) != frame[-4:]:
                bad[k] = True
                continue
            frames[k] = frame
        return frames, ShardDamage(None, bad) if bad.any() else None

    def decode_frame(self, frame: bytes) -> np.ndarray:
        """An inner chunk from its encoded bytes (checksum already verified)."""
        return np.frombuffer(self.zstd.decode(frame[:-4]), dtype=self.dtype).reshape(self.inner)

    def encode_frame(self, chunk: np.ndarray) -> bytes:
        """An inner chunk's encoded bytes: zstd, then its CRC-32C."""
        body = self.zstd.encode(np.ascontiguousarray(chunk, dtype=self.dtype).tobytes())
        return bytes(body) + crc32c(body)

    def write_frames(self, pos: tuple[int, ...], frames: list[bytes | None]) -> None:
        """Write shard ``pos`` whole, atomically, from its inner chunks' encoded bytes (None:
        absent); no chunk at all: no file."""
        path = self.path(pos)
        if all(f is None for f in frames):
            path.unlink(missing_ok=True)
            return
        index = np.full((self.n_inner, 2), EMPTY, dtype="<u8")
        offset = 0
        for k, frame in enumerate(frames):
            if frame is not None:
                index[k] = (offset, len(frame))
                offset += len(frame)
        tail = index.tobytes()
        data = b"".join(f for f in frames if f is not None) + tail + crc32c(tail)
        if path.parent not in self._dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._dirs.add(path.parent)
        chunkfiles._atomic_write(path, data)  # through the module: the kill tests replace it

    def read(self, pos: tuple[int, ...]) -> np.ndarray:
        return self.load(pos)[0]

    def _index(self, raw: bytes) -> tuple[np.ndarray | None, str | None]:
        size = self.n_inner * 16
        if len(raw) < size + 4:
            return None, f"truncated ({len(raw)} bytes, shorter than its index)"
        body, stored = raw[len(raw) - size - 4:len(raw) - 4], raw[len(raw) - 4:]
        if crc32c(body) != stored:
            return None, "index checksum mismatch (truncated or overwritten)"
        index = np.frombuffer(body, dtype="<u8").reshape(self.n_inner, 2)
        data_end = len(raw) - size - 4
        used = index[:, 0] != EMPTY
        if (index[used, 0] + index[used, 1] > data_end).any():
            return None, "index points past the data (truncated)"
        return index, None

    def _decode(self, raw: bytes, offset: int, length: int) -> np.ndarray | None:
        """Inner chunk at ``raw[offset:offset+length]``, or None if its checksum or contents are wrong."""
        if length < 4:
            return None
        body = raw[offset:offset + length - 4]
        if crc32c(body) != raw[offset + length - 4:offset + length]:
            return None
        try:
            data = self.zstd.decode(body)
        except Exception:  # noqa: BLE001 - a frame that decodes to nothing usable is damage, whatever numcodecs says
            return None
        if len(data) != self.inner_bytes:
            return None
        return np.frombuffer(data, dtype=self.dtype).reshape(self.inner)

    def encode(self, pos: tuple[int, ...], block: np.ndarray, present: np.ndarray) -> bytes | None:
        """The bytes of shard ``pos`` holding the ``present`` inner chunks of ``block``; None if none is."""
        present = present & self.inner_in_array(pos)
        if not present.any():
            return None
        index = np.full((self.n_inner, 2), EMPTY, dtype="<u8")
        parts, offset = [], 0
        for k in np.flatnonzero(present):
            data = np.ascontiguousarray(block[self.inner_slices(int(k))], dtype=self.dtype).tobytes()
            body = self.zstd.encode(data)
            parts += [body, crc32c(body)]
            index[k] = (offset, len(body) + 4)
            offset += len(body) + 4
        tail = index.tobytes()
        return b"".join(parts) + tail + crc32c(tail)

    def write(self, pos: tuple[int, ...], block: np.ndarray, present: np.ndarray | None = None) -> None:
        """Write shard ``pos`` whole, atomically; ``present`` (default: inner chunks holding
        anything but the fill value) says which inner chunks it holds. No chunk: no file."""
        if present is None:
            present = np.array([not self._only_fill(block[self.inner_slices(k)]) for k in range(self.n_inner)])
        data = self.encode(pos, block, present)
        path = self.path(pos)
        if data is None:
            path.unlink(missing_ok=True)
            return
        if path.parent not in self._dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._dirs.add(path.parent)
        chunkfiles._atomic_write(path, data)  # through the module: the kill tests replace it

    def _only_fill(self, block: np.ndarray) -> bool:
        if self.fill.dtype.kind == "f" and np.isnan(self.fill):
            return bool(np.isnan(block).all())
        return bool((block == self.fill).all())


# Layout of the result arrays. A checksummed chunk holds at least INNER_REPS replications of
# one cell (a damaged chunk is reported and rerun as one block); a shard file holds about
# SHARD_VALUES values of cells x replications (the unit a compaction rewrites).
INNER_REPS = 256
SHARD_VALUES = 1 << 16


def shard_layout(cells: tuple[int, ...], replications: int, chunk: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(inner chunk, shard) over cells x replications for a store whose batches are ``chunk``
    replications: inner chunks of one cell and at least INNER_REPS replications (a multiple
    of ``chunk``, at most the replications), shards of about SHARD_VALUES values, blocking
    cells from the last sweep dimension backwards."""
    inner = max(1, min(replications, chunk * -(-INNER_REPS // max(chunk, 1))))
    reps = inner * max(1, min(-(-replications // inner), SHARD_VALUES // inner))
    budget, block = max(1, SHARD_VALUES // reps), []
    for n in reversed(cells):
        k = min(n, budget) if budget > 1 else 1
        block.append(k)
        budget = budget // k if k == n else 1
    return (1,) * len(cells) + (inner,), tuple(reversed(block)) + (reps,)


def any_per_block(mask: np.ndarray, inner: int) -> np.ndarray:
    """``mask`` (cells x replications) reduced to cells x blocks of ``inner`` replications."""
    n = mask.shape[-1]
    pad = -n % inner
    padded = np.concatenate([mask, np.zeros(mask.shape[:-1] + (pad,), bool)], axis=-1)
    return padded.reshape(mask.shape[:-1] + (-1, inner)).any(axis=-1)
