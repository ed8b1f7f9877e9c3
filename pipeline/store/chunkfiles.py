"""Chunk files of a zarr v3 array written directly: encoded here, one atomic file each.

zarr's own ``setitem`` costs about 0.5 ms of client CPU per chunk file (indexing, the
async codec pipeline, a thread hop per file), which made the store write most of the
client's cost per task (benchmarks/README.md, "Result path"). The arrays of our stores
use one layout only: a regular chunk grid, the default chunk key encoding, the ``bytes``
codec (little endian), ``zstd`` and (since store format 2) ``crc32c``. For those this module encodes a chunk with numpy and
numcodecs and writes its file as zarr's ``LocalStore`` does (a temporary file renamed
over the chunk, so a reader or a kill sees the old chunk or the new one, never part of
one), and a chunk that holds only the fill value is removed, as zarr does by default.
Any other layout (:func:`supports` is False) is written by zarr itself.

A partly written chunk is read back from its file, changed and written again: the client
is the store's only writer and writes one round at a time, so nothing else changes the
file in between.
"""
from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import zarr


def crc32c(data: Any) -> bytes:
    """CRC-32C of ``data`` as the four little-endian bytes the ``crc32c`` codec appends."""
    import google_crc32c

    return int(google_crc32c.value(bytes(data) if isinstance(data, memoryview) else data)).to_bytes(4, "little")


def supports(array: zarr.Array) -> bool:
    """Whether :class:`ChunkFiles` writes this array the way zarr would (else zarr writes it)."""
    try:  # zarr.core is zarr's own layout: a zarr that moved these is written by zarr itself
        from zarr.codecs import BytesCodec, ZstdCodec
        from zarr.core.chunk_grids import RegularChunkGrid
        from zarr.core.chunk_key_encodings import DefaultChunkKeyEncoding
    except ImportError:
        return False
    meta = array.metadata
    if getattr(meta, "zarr_format", None) != 3 or not isinstance(meta.chunk_grid, RegularChunkGrid):
        return False
    if not isinstance(meta.chunk_key_encoding, DefaultChunkKeyEncoding):
        return False
    from zarr.codecs import Crc32cCodec

    codecs = tuple(meta.codecs)
    kinds = [type(c) for c in codecs]
    if kinds not in ([BytesCodec], [BytesCodec, ZstdCodec], [BytesCodec, ZstdCodec, Crc32cCodec],
                     [BytesCodec, Crc32cCodec]) or np.dtype(array.dtype).kind not in "biuf":
        return False
    return codecs[0].endian is None or codecs[0].endian.value == "little" or np.dtype(array.dtype).itemsize == 1


class ChunkFiles:
    """Read and write whole chunks of one array of a local store (see the module docstring)."""

    def __init__(self, root: Path, array: zarr.Array):
        import numcodecs

        self.meta = array.metadata
        self.dir = Path(root) / array.path
        self.shape = tuple(array.shape)
        self.chunks = tuple(array.chunks)
        self.dtype = np.dtype(array.dtype).newbyteorder("<")
        self.fill = np.asarray(self.meta.fill_value, dtype=self.dtype)
        zstd = [c for c in self.meta.codecs[1:] if type(c).__name__ == "ZstdCodec"]
        self.zstd = numcodecs.Zstd(level=zstd[0].level, checksum=zstd[0].checksum) if zstd else None
        self.crc = type(self.meta.codecs[-1]).__name__ == "Crc32cCodec"  # a checksum appended (stores since format 2)
        self._dirs: set[Path] = set()  # folders known to exist (one mkdir per folder, not per write)

    def path(self, pos: tuple[int, ...]) -> Path:
        return self.dir / self.meta.encode_chunk_key(pos)

    def region(self, pos: tuple[int, ...]) -> tuple[slice, ...]:
        """The part of the array chunk ``pos`` holds (an edge chunk is cut at the array's end)."""
        return tuple(slice(p * c, min((p + 1) * c, n)) for p, c, n in zip(pos, self.chunks, self.shape))

    def empty(self) -> np.ndarray:
        return np.full(self.chunks, self.fill, dtype=self.dtype)

    def read(self, pos: tuple[int, ...]) -> np.ndarray:
        """Chunk ``pos`` at its full chunk shape (edge chunks padded), the fill value if it has no file."""
        try:
            raw = self.path(pos).read_bytes()
        except FileNotFoundError:
            return self.empty()
        if self.crc:
            raw, stored = raw[:-4], raw[-4:]
            if crc32c(raw) != stored:
                from ..base.errors import StoreError

                raise StoreError(f"{self.path(pos)}: checksum mismatch (the file is damaged)")
        if self.zstd is not None:
            raw = self.zstd.decode(raw)
        return np.frombuffer(raw, dtype=self.dtype).reshape(self.chunks).copy()

    def _only_fill(self, block: np.ndarray) -> bool:
        if self.fill.dtype.kind == "f" and np.isnan(self.fill):
            return bool(np.isnan(block).all())
        return bool((block == self.fill).all())

    def write(self, pos: tuple[int, ...], block: np.ndarray) -> None:
        """Write chunk ``pos`` from ``block`` (its full chunk shape): atomically, or remove its
        file when the chunk holds only the fill value (what zarr's default does)."""
        path = self.path(pos)
        if self._only_fill(block):
            path.unlink(missing_ok=True)
            return
        data = np.ascontiguousarray(block, dtype=self.dtype).tobytes()
        if self.zstd is not None:
            data = self.zstd.encode(data)
        if self.crc:
            data = bytes(data) + crc32c(data)
        folder = path.parent
        if folder not in self._dirs:
            folder.mkdir(parents=True, exist_ok=True)
            self._dirs.add(folder)
        _atomic_write(path, data)


_serial = itertools.count()  # temporary names unique in this process (the store's one writer): no uuid4 per file


def _atomic_write(path: Path, data: Any) -> None:
    """``data`` into ``path`` through a temporary file beside it renamed over it (as zarr's
    ``LocalStore`` writes), so the file is the old or the new chunk at every instant."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{next(_serial)}.partial")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as to zarr's files
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
