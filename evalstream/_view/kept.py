"""The index of ``evalstream view`` kept beside the files (``--keep-index``), and reused
while they are unchanged.

The index is written to ``VERDICTS.view-index`` (``index_path``) after it was built, and
read back instead of reading the files again on the next run with the same options. Its
file: a first line ``evalstream view index``, one line of JSON (``Kept``: the format, the
version, what was indexed with which options, each file's stamp, the index's small parts,
where each array lies), then the arrays' bytes; no pickle, nothing executed.

**Staleness.** A kept index is used only when every file it indexed (cases, each of several
case files read as one, verdicts, states, compare, compare cases) is byte for byte the file
it was built from: first its stat (size,
modification time in nanoseconds, inode and device: a file replaced or rewritten in place
differs there, at no cost), then its whole content's xxh3-128, against the one taken when
the index was built. The hash costs a read of the files at memory speed (about 0.3 s a GB
from the page cache, against a minute or more a GB to index them), and it is what makes the
rule hold where stat cannot: a file rewritten within the clock's resolution, or given back
its old time (``touch -r``, ``cp -p``, ``rsync -t``) and size. The same options are needed
too: the rubric set's hash (its ``allows_na`` among what it covers), ``--max-tokens`` and
``--max-output-tokens`` (both decide which checks are over the budget: the budget holds the
answer's bound back) and the tokenizer the records name (``view.run.recorded_tokenizer``),
``--by``, ``--max-line-bytes``, ``--allow-unknown-fields``, the paths
(``--states``, which decides which verdicts are stale, ``--compare`` and
``--compare-cases`` among them; every case file of several, in order: issue 30),
evalstream's version and the format of the kept file: every field of ``index.Options`` but
``keep_index`` itself (tests/view/test_kept.py checks it). The index holds what the lists
are made of, the run's stale codes (``Run.stale``), coverage's inputs, each verdict's
pair code (``Run.pair``), run B's case index (``--compare-cases``) and the split panels
(``Index.panels``: each split verdict's key and pattern of votes) among them.
Anything else (another option, a changed file, a damaged or foreign kept file) indexes again
and replaces it; the run says why. While the pages are served, every read checks the file's
size and time again (``records.Source``).
"""

from __future__ import annotations

import os
from array import array
from typing import Any

import msgspec
import xxhash

from evalstream._cases.ids import IdIndex
from evalstream._files.transaction import Target, Transaction
from evalstream._version import __version__
from evalstream._view.index import (
    FileSummary,
    Index,
    Names,
    Options,
    RejectLog,
    Run,
)
from evalstream._view.panel_index import PanelIndex
from evalstream.errors import EvalstreamError

MAGIC = b"evalstream view index\n"
# 2: the run's stale codes (issue 25) kept beside its hashes; --max-output-tokens in the key.
# 3: each verdict's pair code and run B's cases (issue 28); --compare-cases in the key.
# 4: the split panels (issue 26: ``Index.panels``, the "split panels" list's keys, pattern
#    codes and patterns, and how many verdicts carried votes); a format-3 index has none, so
#    its view of a panel's verdicts would lose that list: it is indexed again.
FORMAT = 4
SUFFIX = ".view-index"
_BLOCK = 1 << 20
# Each array starts at a multiple of this in the file: numpy works on aligned arrays in place
# (read unaligned, every search copied them: a 1.6 s export took 8.8 s).
_ALIGN = 64


def index_path(opts: Options) -> str:
    """Where ``--keep-index`` keeps the index: beside the verdicts file."""
    return opts.verdicts + SUFFIX


class Stamp(msgspec.Struct):
    """A file as it was indexed: its stat and the xxh3-128 of all its bytes."""

    role: str
    path: str
    size: int
    mtime_ns: int
    inode: int
    device: int
    xxh3: str


class ArrayAt(msgspec.Struct):
    """Where one array's bytes lie after the JSON line."""

    name: str
    dtype: str  # numpy's, or "array:CODE" for an array.array of that type code
    shape: list[int]
    offset: int
    nbytes: int


class KeptNames(msgspec.Struct):
    names: list[str]
    limit: int
    other: str
    other_code: int | None


class Kept(msgspec.Struct):
    """The JSON line of a kept index."""

    format: int
    evalstream: str
    options: str  # what was indexed and how (``_options_key``)
    files: list[Stamp]
    summaries: list[FileSummary]
    names: dict[str, KeptNames]
    unknown_where: list[tuple[str, int]]
    ids: tuple[int, int]  # (size, capacity) of the id index
    unknown_ids: tuple[int, int]
    paired_ids: tuple[int, int] | None  # run B's id index (--compare-cases), when given
    rubric_hash_mismatch: dict[str, int]
    unknown_rubrics: dict[str, int]
    seconds: float
    arrays: list[ArrayAt]
    payload: str  # xxh3-128 of the bytes after the JSON line: a damaged file is not used
    # The split panels' patterns of votes (by code) and the verdicts with votes (format 4).
    panel_patterns: list[str] = []
    panel_with_votes: int = 0


def stamp(role: str, path: str) -> Stamp:
    """A file's stamp now (its content read once, in blocks)."""
    info = os.stat(path)
    digest = xxhash.xxh3_128()
    with open(path, "rb", buffering=0) as f:
        while block := f.read(_BLOCK):
            digest.update(block)
    return Stamp(role, os.path.abspath(path), info.st_size, info.st_mtime_ns, info.st_ino,
                 info.st_dev, digest.hexdigest())


def _files(opts: Options) -> list[tuple[str, str | None]]:
    """Each file indexed, by role, in order: every case file of several (issue 30), then the
    others (None where not given)."""
    return [*(("cases", c) for c in opts.case_files()), ("verdicts", opts.verdicts),
            ("states", opts.states), ("compare", opts.compare),
            ("compare-cases", opts.compare_cases)]


def _options_key(opts: Options, rubric_hash: str) -> str:
    roles = [(r, os.path.abspath(p) if p else None) for r, p in _files(opts)]
    return msgspec.json.encode([roles, rubric_hash, opts.max_tokens, opts.max_output_tokens,
                                opts.tokenizer, opts.by, opts.max_line_bytes,
                                opts.allow_unknown_fields]).decode()


def load(opts: Options, rubric_hash: str) -> tuple[Index | None, str]:
    """The kept index, when it indexed exactly these files with these options; else None and
    why it is not used (a sentence)."""
    path = index_path(opts)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None, f"no index was kept in {path} yet"
    except OSError as exc:
        return None, f"the index kept in {path} cannot be read ({exc.strerror or exc})"
    kept, payload = _parse(data)
    if kept is None:
        return None, f"{path} is not an index this version of evalstream keeps"
    if kept.options != _options_key(opts, rubric_hash):
        return None, f"the index kept in {path} was made from other files or options"
    for old in kept.files:
        changed = _changed(old)
        if changed:
            return None, f"{old.path} changed since its index was kept ({changed})"
    try:
        index = _index(opts, kept, payload)
    except (ValueError, TypeError, KeyError, IndexError):
        return None, f"{path} is damaged"
    return index, "the files are those indexed: the same stat and xxh3-128"


def _parse(data: bytes) -> tuple[Kept | None, memoryview]:
    if not data.startswith(MAGIC):
        return None, memoryview(b"")
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        return None, memoryview(b"")
    try:
        kept = msgspec.json.decode(data[len(MAGIC):end], type=Kept)
    except (msgspec.DecodeError, RecursionError):
        return None, memoryview(b"")
    payload = memoryview(data)[end + 1:]
    if kept.format != FORMAT or kept.evalstream != __version__ \
            or xxhash.xxh3_128_hexdigest(payload) != kept.payload:
        return None, payload
    return kept, payload


def _changed(old: Stamp) -> str:
    """What differs between a file now and its stamp ("" when nothing does)."""
    try:
        info = os.stat(old.path)
    except OSError as exc:
        return f"it cannot be read: {exc.strerror or exc}"
    for what, was, now in (("its size", old.size, info.st_size),
                           ("its modification time", old.mtime_ns, info.st_mtime_ns),
                           ("its inode: another file under its name", old.inode, info.st_ino),
                           ("its device", old.device, info.st_dev)):
        if was != now:
            return what
    if stamp(old.role, old.path).xxh3 != old.xxh3:
        return "its content, under the same size and time"
    return ""


# -- the index as arrays and JSON ------------------------------------------------------------
_ARRAYS = ("case_line", "case_offset", "case_group", "label_key", "label_status",
           "label_source", "state_key", "state_offset", "state_is_judge", "state_line",
           "skipped_key", "skipped_reason", "over_key", "over_tokens", "over_exact",
           "pending_key", "pending_role", "pending_offset")
_RUN = ("offset", "line", "key", "status", "cause", "hashes", "order", "sorted_key", "stale",
        "pair")
_RUN_OPTIONAL = ("hashes", "stale", "pair")  # None in some runs: kept only where present
_REJECTS = ("role", "kind", "line", "offset", "size", "first")
_NAMES = ("groups", "rubric_names", "causes", "reasons")


def _arrays_of(index: Index) -> dict[str, Any]:
    arrays: dict[str, Any] = {name: getattr(index, name) for name in _ARRAYS}
    for prefix, run in (("run", index.run), ("other", index.other)):
        if run is not None:
            arrays.update({f"{prefix}.{n}": getattr(run, n) for n in _RUN
                           if getattr(run, n) is not None})
    arrays.update({f"rejects.{n}": getattr(index.rejects, n) for n in _REJECTS})
    for prefix, ids in (("ids", index.ids), ("unknown_ids", index.unknown_ids),
                        ("paired_ids", index.paired_ids)):
        if ids is not None:
            arrays.update(zip((f"{prefix}.lo", f"{prefix}.hi", f"{prefix}.line"),
                              ids.columns(), strict=True))
    if index.paired_line is not None:
        arrays.update({"paired_line": index.paired_line, "paired_offset": index.paired_offset})
    arrays.update({"panels.keys": index.panels.keys, "panels.kinds": index.panels.kinds})
    return arrays


def save(index: Index, stamps: list[Stamp], rubric_hash: str) -> str:
    """Write ``index`` to ``index_path`` (atomically: a temporary file renamed), with the
    stamps taken of its files; returns the path."""
    import numpy as np

    opts = index.options
    path = index_path(opts)
    placed, pieces, offset = [], [], 0
    for name, values in _arrays_of(index).items():
        if isinstance(values, array):
            dtype, shape, data = f"array:{values.typecode}", [len(values)], values.tobytes()
        else:
            values = np.ascontiguousarray(values)
            dtype, shape, data = values.dtype.str, list(values.shape), values.tobytes()
        placed.append(ArrayAt(name, dtype, shape, offset, len(data)))
        pad = -len(data) % _ALIGN
        pieces += [data, bytes(pad)]
        offset += len(data) + pad
    digest = xxhash.xxh3_128()
    for piece in pieces:
        digest.update(piece)
    kept = Kept(FORMAT, __version__, _options_key(opts, rubric_hash), stamps,
                list(index.files.values()),
                {n: _kept_names(getattr(index, n)) for n in _NAMES}
                | {"reject_kinds": _kept_names(index.rejects.kinds)},
                index.unknown_where, (index.ids.size, len(index.ids.columns()[0])),
                (index.unknown_ids.size, len(index.unknown_ids.columns()[0])),
                None if index.paired_ids is None else
                (index.paired_ids.size, len(index.paired_ids.columns()[0])),
                index.rubric_hash_mismatch, index.unknown_rubrics, index.seconds, placed,
                digest.hexdigest(), panel_patterns=list(index.panels.patterns),
                panel_with_votes=index.panels.with_votes)
    rubrics = [r for r in (index.rubrics.sources or ()) if os.path.exists(r)]
    inputs = [(role, p) for role, p in _files(opts) if p]
    head = MAGIC + msgspec.json.encode(kept)
    head += b" " * (-(len(head) + 1) % _ALIGN) + b"\n"  # the arrays start aligned
    with Transaction([*inputs, *(("rubric file", r) for r in rubrics)],
                     [Target("index", path, "view index")]).check() as targets:
        out = targets.open("index")
        out.write(head)
        for piece in pieces:
            out.write(piece)
    return path


def _kept_names(names: Names) -> KeptNames:
    return KeptNames(names.names, names.limit, names.other, names.other_code)


def _names(kept: KeptNames) -> Names:
    names = Names(kept.limit, kept.other)
    names.names = list(kept.names)
    names.other_code = kept.other_code
    names.of = {n: i for i, n in enumerate(kept.names) if i != kept.other_code}
    return names


def _index(opts: Options, kept: Kept, payload: memoryview) -> Index:
    import numpy as np

    arrays: dict[str, Any] = {}
    for at in kept.arrays:
        data = payload[at.offset:at.offset + at.nbytes]
        if len(data) != at.nbytes:
            raise ValueError(f"array {at.name} runs past the end")
        if at.dtype.startswith("array:"):
            values = array(at.dtype[6:])
            values.frombytes(data)
            arrays[at.name] = values
        else:
            arrays[at.name] = np.frombuffer(data, dtype=np.dtype(at.dtype)).reshape(at.shape)

    def run(prefix: str) -> Run | None:
        if f"{prefix}.key" not in arrays:
            return None
        got = {n: arrays[f"{prefix}.{n}"] for n in _RUN if n not in _RUN_OPTIONAL}
        return Run(**got, hashes=arrays.get(f"{prefix}.hashes"),
                   stale=arrays.get(f"{prefix}.stale"), pair=arrays.get(f"{prefix}.pair"))

    def ids(prefix: str, size: tuple[int, int]) -> IdIndex:
        return IdIndex.from_columns(arrays[f"{prefix}.lo"], arrays[f"{prefix}.hi"],
                                    arrays[f"{prefix}.line"], size[0])

    rejects = RejectLog(**{n: arrays[f"rejects.{n}"] for n in _REJECTS},
                        kinds=_names(kept.names["reject_kinds"]))
    main_run = run("run")
    if main_run is None:
        raise KeyError("run")
    panels = PanelIndex()
    panels.keys, panels.kinds = arrays["panels.keys"], arrays["panels.kinds"]
    panels.patterns = list(kept.panel_patterns)
    panels._code = {p: i for i, p in enumerate(panels.patterns)}
    panels.with_votes = kept.panel_with_votes
    from evalstream._checks.rubrics import builtin

    return Index(
        options=opts, rubrics=opts.rubrics or builtin(),
        files={f.role: f for f in kept.summaries}, ids=ids("ids", kept.ids),
        unknown_ids=ids("unknown_ids", kept.unknown_ids),
        unknown_where=[tuple(w) for w in kept.unknown_where],  # type: ignore[misc]
        groups=_names(kept.names["groups"]), rubric_names=_names(kept.names["rubric_names"]),
        causes=_names(kept.names["causes"]), reasons=_names(kept.names["reasons"]),
        run=main_run, other=run("other"), rejects=rejects,
        rubric_hash_mismatch=kept.rubric_hash_mismatch, unknown_rubrics=kept.unknown_rubrics,
        seconds=kept.seconds, **{name: arrays[name] for name in _ARRAYS},
        paired_ids=None if kept.paired_ids is None else ids("paired_ids", kept.paired_ids),
        paired_line=arrays.get("paired_line"), paired_offset=arrays.get("paired_offset"),
        panels=panels)


def kept_or_built(opts: Options, build: Any) -> Index:
    """With ``opts.keep_index``: the kept index when it is fresh, else ``build()``'s, kept
    for the next run (``Index.kept`` says which, and why). Without it: ``build()``."""
    from evalstream._checks.rubrics import builtin

    if not opts.keep_index:
        index: Index = build()
        return index
    rubric_hash = (opts.rubrics or builtin()).hash
    found, why = load(opts, rubric_hash)
    if found is not None:
        found.kept, found.reused = f"reused the index kept in {index_path(opts)} ({why})", True
        return found
    paths = [(r, p) for r, p in _files(opts) if p]
    before = [os.stat(p) for _, p in paths]
    index = build()
    try:
        stamps = [stamp(role, p) for role, p in paths]
        if any((s.size, s.mtime_ns, s.inode) != (b.st_size, b.st_mtime_ns, b.st_ino)
               for s, b in zip(stamps, before, strict=True)):
            index.kept = "did not keep the index: a file changed while it was read"
            return index
        index.kept = f"kept the index in {save(index, stamps, rubric_hash)} ({why})"
    except (OSError, EvalstreamError) as exc:
        index.kept = f"could not keep the index ({exc}); the pages are served without it"
    return index
