"""The corpus snapshot: what start-up would otherwise rebuild from every memory, in
one file under index/ (`corpus.snapshot`).

It holds the corpus's columns (vectors, filters, neighbours, dense-index cells), the
cells' centroids, its postings as flat arrays, each row's metadata and the long
notes' chunks, with the keyword catalog's epoch and generation it reflects and the
model that made the vectors. Start-up trusts it only if every check holds: the
magic, the format version, the digest of the whole file (a torn or truncated file
fails it), the catalog's epoch (a catalog created afresh is another catalog), a
generation no newer than the catalog's, the model, and the language rules that made
the readings it keeps (`rules_digest`: a changed rule reads every row again, with no
number to remember to bump). Then it catches up on the rows written since
(catalog.writer.written_since).

Written to a temp file, fsync'd, renamed over the old one, folder fsync'd: a kill at
any moment leaves the old snapshot or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np

from memoryd.retrieval.columns import COLUMNS, RowMeta
from memoryd.retrieval.corpus import Corpus
from memoryd.retrieval.postings import Postings

MAGIC = b"memoryd corpus snapshot\n"
# 2: the dense index's cells (centroids, a column, `trained`); 3: titles; 4: entities;
# 5: entities read by rules that read more names (each row's are read again);
# 6: a turn's speaker and whether it tells something of them (RowMeta); 7: the rules'
# digest in the header
VERSION = 7
# The modules whose readings of a text the snapshot keeps: the index terms (stems,
# speakers), the names, whether a turn tells something. tests/retrieval/
# test_snapshot_rules.py checks that every language module the corpus and the index
# text read is here.
READ_BY_RULES = ("memoryd.lang.terms", "memoryd.lang.names",
                 "memoryd.lang.facts", "memoryd.lang.kinds", "memoryd.lang.past",
                 "memoryd.lang.signals", "memoryd.lang.sentences", "memoryd.lang.daynames")
_LENGTH = 8  # bytes of the header's length, little-endian
_DIGEST = 32  # sha256 of everything before it, at the end of the file
_ALIGN = 64


class Problem(Exception):
    """The snapshot cannot be trusted (missing, torn, from another catalog...)."""


class Section(msgspec.Struct, array_like=True):
    name: str
    dtype: str
    shape: list[int]
    offset: int


class Header(msgspec.Struct, forbid_unknown_fields=True):
    version: int
    epoch: str
    generation: int
    model: str
    dim: int
    size: int
    scopes: list[str]  # in code order
    sessions: list[tuple[str, str]]  # (scope, session), in code order
    stale_context: list[str]
    sections: list[Section]
    trained: int = 0  # live rows the centroids were made from (0: no cells)
    collections: list[str] = []  # the vector store's collection ids when saved
    rules: str = ""  # rules_digest() when saved


_encode = msgspec.msgpack.Encoder().encode


@dataclass
class Captured:
    """What a snapshot holds: its header and the parts of its body, in order."""

    header: Header
    blobs: list[bytes | np.ndarray]


def capture(corpus: Corpus, epoch: str, generation: int, model: str,
            stale_context: set[str], collections: list[str] | None = None) -> Captured:
    """What the snapshot holds (hold the corpus write lock; dead rows are compacted away).
    The columns are views: write it before the corpus changes again."""
    corpus.compact(force=True)
    n = corpus.size
    blobs: dict[str, np.ndarray | bytes] = {}
    for name in COLUMNS:
        blobs[name] = getattr(corpus, name)[:n]
    metas = corpus.meta[:n]
    blobs["meta"] = _encode([m for m in metas if m is not None])
    terms, offsets, rows, tfs = corpus.postings.flat()
    blobs["terms"] = _encode(terms)
    blobs["term_offsets"], blobs["posting_rows"], blobs["posting_tfs"] = offsets, rows, tfs
    owners = list(corpus.chunks)
    blobs["chunk_owners"] = _encode([(o, corpus.chunks[o][1]) for o in owners])
    blobs["chunk_vectors"] = _concat([corpus.chunks[o][0] for o in owners], np.float32,
                                     (0, corpus.dim))
    blobs["centroids"] = (corpus.centroids if corpus.centroids is not None
                          else np.zeros((0, corpus.dim), dtype=np.float32))
    sections: list[Section] = []
    parts: list[bytes | np.ndarray] = []
    offset = 0
    for name, blob in blobs.items():
        array = blob if isinstance(blob, np.ndarray) else np.frombuffer(blob, np.uint8)
        pad = -offset % _ALIGN
        if pad:
            parts.append(b"\0" * pad)
            offset += pad
        sections.append(Section(name, array.dtype.str, list(array.shape), offset))
        parts.append(array)
        offset += array.nbytes
    sessions = sorted(corpus.session_codes, key=corpus.session_codes.__getitem__)
    header = Header(version=VERSION, epoch=epoch, generation=generation, model=model,
                    dim=corpus.dim, size=n,
                    scopes=sorted(corpus.scope_codes, key=corpus.scope_codes.__getitem__),
                    sessions=sessions, stale_context=sorted(stale_context),
                    sections=sections, trained=corpus.trained,
                    collections=collections or [], rules=rules_digest())
    return Captured(header, parts)


def _concat(arrays: list[np.ndarray], dtype: type, empty: tuple[int, ...] = (0,)
            ) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(
        empty, dtype=dtype)


def write(path: Path, captured: Captured) -> int:
    """Write the snapshot durably in place of the old one; returns its size in bytes."""
    head = msgspec.json.encode(captured.header)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    digest = hashlib.sha256()
    size = 0
    try:
        with open(tmp, "wb") as fh:
            for part in [MAGIC, len(head).to_bytes(_LENGTH, "little"), head, *captured.blobs]:
                view = (np.ascontiguousarray(part).reshape(-1).view(np.uint8).data
                        if isinstance(part, np.ndarray) else part)
                digest.update(view)
                fh.write(view)
                size += len(view)
            fh.write(digest.digest())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return size + _DIGEST


def remove_temps(folder: Path, name: str) -> None:
    """Temp files a killed writer left (the daemon holds the root's lock)."""
    for stale in folder.glob(f".{name}.tmp-*"):
        with contextlib.suppress(OSError):
            stale.unlink()


Loaded = tuple[Corpus, Header]  # a snapshot read back: its corpus, and its header


def read(path: Path, epoch: str, generation: int, model: str, dim: int) -> Loaded:
    """The corpus the snapshot holds, if every check passes; else `Problem`."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            data = bytearray(size)
            if fh.readinto(data) != size:
                raise Problem("it changed while read")
    except FileNotFoundError:
        raise Problem("there is none") from None
    except OSError as exc:
        raise Problem(f"it cannot be read: {exc.strerror}") from None
    view = memoryview(data)
    if size < len(MAGIC) + _LENGTH + _DIGEST or bytes(view[:len(MAGIC)]) != MAGIC:
        raise Problem("it is not a snapshot (or is truncated)")
    body = view[:-_DIGEST]
    if hashlib.sha256(body).digest() != bytes(view[-_DIGEST:]):
        raise Problem("its digest does not match (torn or truncated)")
    at = len(MAGIC)
    head_len = int.from_bytes(view[at:at + _LENGTH], "little")
    at += _LENGTH
    try:
        header = msgspec.json.decode(view[at:at + head_len], type=Header)
    except msgspec.DecodeError as exc:
        raise Problem(f"its header is unreadable: {exc}") from None
    if header.version != VERSION:
        raise Problem(f"format {header.version}, this memoryd reads {VERSION}")
    if header.epoch != epoch:
        raise Problem("it belongs to another keyword catalog (rebuilt since)")
    if header.generation > generation:
        raise Problem(f"it is newer (generation {header.generation}) than the keyword "
                      f"catalog ({generation})")
    if header.rules != rules_digest():
        raise Problem("the language rules changed since it was saved (its readings of "
                      "names, terms and turns are read again)")
    if header.model != model or header.dim != dim:
        raise Problem(f"its vectors are from {header.model}, the embedder is {model}")
    base = at + head_len
    arrays: dict[str, np.ndarray] = {}
    for s in header.sections:
        count = int(np.prod(s.shape)) if s.shape else 1
        arrays[s.name] = np.frombuffer(body, dtype=np.dtype(s.dtype), count=count,
                                       offset=base + s.offset).reshape(s.shape)
    try:
        return _corpus(header, arrays), header
    except (KeyError, ValueError, TypeError, msgspec.DecodeError) as exc:
        raise Problem(f"its contents do not fit together: {exc}") from None


def _corpus(header: Header, arrays: dict[str, np.ndarray]) -> Corpus:
    n = header.size
    corpus = Corpus(header.dim, capacity=max(1024, n + n // 8))
    for name in COLUMNS:
        column = arrays[name]
        if len(column) != n:
            raise ValueError(f"column {name} has {len(column)} rows, not {n}")
        getattr(corpus, name)[:n] = column
    corpus.size = corpus.live = n
    corpus.scope_codes = {s: code for code, s in enumerate(header.scopes)}
    corpus.session_codes = {(s, x): code for code, (s, x) in enumerate(header.sessions)}
    metas = msgspec.msgpack.decode(arrays["meta"].tobytes(), type=list[RowMeta])
    if len(metas) != n:
        raise ValueError(f"{len(metas)} rows of metadata, not {n}")
    corpus.meta = list(metas)
    corpus.entities.rebuild(corpus.meta)
    corpus.row_of = {m.id: row for row, m in enumerate(metas)}
    for row, m in enumerate(metas):
        if m.is_turn and m.session is not None:
            corpus.sessions.setdefault((m.scope, m.session), []).append(
                (float(corpus.created[row]), m.id))
    for turns in corpus.sessions.values():
        turns.sort()
    terms = msgspec.msgpack.decode(arrays["terms"].tobytes(), type=list[str])
    rows = arrays["posting_rows"]
    if len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= n):
        raise ValueError("a posting names a row the snapshot does not have")
    # Copies: the views would keep the whole file's buffer alive.
    corpus.postings = Postings(terms, arrays["term_offsets"].copy(), rows.copy(),
                               arrays["posting_tfs"].copy())
    owners = msgspec.msgpack.decode(arrays["chunk_owners"].tobytes(),
                                    type=list[tuple[str, list[tuple[int, int]]]])
    vectors, at = arrays["chunk_vectors"], 0
    for owner, spans in owners:
        corpus.chunks.put(owner, vectors[at:at + len(spans)].copy(), spans)
        at += len(spans)
    centroids = arrays["centroids"]
    cell = corpus.cell[:n]
    if len(centroids):
        if centroids.shape[1:] != (header.dim,) or int(cell.max(initial=-1)) >= len(centroids):
            raise ValueError("the cells and their centroids differ")
        corpus.centroids, corpus.trained = centroids.astype(np.float32), header.trained
        corpus.group_cells()
    elif int(cell.max(initial=-1)) >= 0:
        raise ValueError("rows have cells but there are no centroids")
    return corpus


@functools.cache
def rules_digest() -> str:
    """A digest of the source of every module in READ_BY_RULES (as installed), and of
    the rows' layout (RowMeta's fields, the COLUMNS): a field or column added, taken
    away or retyped reads every row again, with no number to bump by hand."""
    digest = hashlib.sha256()
    layout = [(f.name, repr(f.type)) for f in msgspec.structs.fields(RowMeta)]
    digest.update(repr((layout, sorted((k, np.dtype(t).str, repr(e))
                                       for k, (t, e) in COLUMNS.items()))).encode())
    for name in READ_BY_RULES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise RuntimeError(f"{name}: no source to digest")
        digest.update(name.encode() + b"\0" + Path(spec.origin).read_bytes())
    return digest.hexdigest()[:32]
