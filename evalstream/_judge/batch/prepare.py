"""``batch prepare``: build's output -> a folder of request files and a manifest.

One pass over the input, through the one read loop (``judge.inputs``): each judge state's
request is built by ``judge.request.build`` (the body a live run would send) and written as
one request line whose ``custom_id`` is the request's store key (64 hex characters: the same
for the same request whichever dataset it came from). Two states with the same request share
one line; a state whose answer the consulted store already holds (``--store``,
``--only-missing``) gets none. Files are split at the provider's limits, never mid-line, and
named ``requests-00001.jsonl``, ... in order: the same input gives the same bytes. A pairwise
state's two orders (``judge.pairs``) are two requests in the pairwise form, and the manifest
keeps each order's ``pair`` for collect to make their one verdict.

The folder is written under a hidden temporary name beside it and renamed into place when
everything is written, so it appears whole or not at all (one rename for all its files).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import msgspec
import xxhash

from evalstream._cases.rejects import Reject, raw_text
from evalstream._files.lines import DEFAULT_MAX_LINE_BYTES
from evalstream._files.sniff import check_input
from evalstream._files.transaction import FOLDER, Target, Transaction
from evalstream._judge import inputs, pairs
from evalstream._judge.batch import formats
from evalstream._judge.batch.manifest import BatchFile, Manifest, check_new_folder
from evalstream._judge.batch.report import (
    FileEntry,
    Limit,
    PrepareCounts,
    PrepareReport,
)
from evalstream._judge.batch.report import encode as encode_report
from evalstream._judge.request import JudgeConfig, build
from evalstream._judge.store import Store
from evalstream._version import __version__
from evalstream.errors import EXIT_OK, EXIT_REJECTS, OutputError, UsageError

REPORT = "prepare.report.json"
REJECTS = "rejects.jsonl"
FILE_NAME = "requests-{:05d}.jsonl"
OVER_LIMIT = "request over the file limit"
USAGE = ("; batch prepare reads build's output: run `evalstream build {input} states.jsonl` "
         "first and prepare states.jsonl")


@dataclass
class Options:
    """Everything a prepare needs (``evalstream.batch_prepare`` fills it)."""

    input: str
    folder: str
    config: JudgeConfig
    max_requests_per_file: int | None = None  # default: the provider's limit
    max_bytes_per_file: int | None = None
    only_missing: str | None = None  # a collected batch folder: leave out what came back
    store: str | None = None  # an answer store: leave out what it holds
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES


def limits(opts: Options) -> formats.Limits:
    """The request-file limits: the provider's, or lower ones given."""
    default = opts.config.api.batch_limits
    return formats.Limits(opts.max_requests_per_file or default.requests,
                          opts.max_bytes_per_file or default.bytes)


def consulted_store(opts: Options) -> tuple[str | None, list[str]]:
    """The store whose answers are not asked again (and warnings about it)."""
    if opts.store and opts.only_missing:
        raise UsageError("give --only-missing DIR or --store FILE, not both: --only-missing "
                         "uses the store DIR was collected into.")
    if opts.store:
        return os.path.abspath(opts.store), []
    if not opts.only_missing:
        return None, []
    earlier = Manifest.open(opts.only_missing, readonly=True)
    try:
        store = earlier.meta.get("collected_into")
        warnings = []
        if store is None:
            raise UsageError(f"{opts.only_missing} was never collected, so what came back is not "
                             f"known: run `evalstream batch collect {opts.only_missing} "
                             "VERDICTS` first (or give --store FILE).")
        if earlier.config().hash != opts.config.hash:
            warnings.append(f"{opts.only_missing} was prepared for another judge config "
                            f"(model {earlier.meta['model']}): none of its answers answer these "
                            "requests, so every judge state is prepared again.")
    finally:
        earlier.close()
    if not os.path.exists(store):
        raise UsageError(f"{opts.only_missing} was collected into {store}, which no longer "
                         "exists; give --store FILE.")
    return store, warnings


class RequestFiles:
    """Request lines into numbered files, a new file when the next line would pass a limit."""

    def __init__(self, folder: str, limit: formats.Limits) -> None:
        self.folder = folder
        self.limit = limit
        self.done: list[BatchFile] = []
        self._file: BinaryIO | None = None
        self._n = 0
        self._requests = 0
        self._bytes = 0
        self._hash = xxhash.xxh3_128()
        self._pending: list[bytes] = []

    def where(self, size: int) -> int:
        """The file a line of ``size`` bytes would go to."""
        if self._file is None or self._requests >= self.limit.requests \
                or self._bytes + size > self.limit.bytes:
            return self._n + 1
        return self._n

    def write(self, line: bytes) -> tuple[int, int]:
        """Write one request line; its file and line number (1-based)."""
        if self.where(len(line)) != self._n:
            self._roll()
        self._pending.append(line)
        self._requests += 1
        self._bytes += len(line)
        self._hash.update(line)
        if len(self._pending) >= 256:
            self._flush()
        return self._n, self._requests

    def drop(self, lines: Iterator[tuple[int, int]]) -> int:
        """Cut the given (file, line) pairs, sorted, from the closed files (lines that repeat
        an earlier line's request); how many were cut. A file left empty is removed."""
        cut = 0
        current, numbers = 0, set[int]()
        for file, line in lines:
            if file != current:
                if numbers:
                    self._rewrite(current, numbers)
                current, numbers = file, set()
            numbers.add(line)
            cut += 1
        if numbers:
            self._rewrite(current, numbers)
        self.done = [f for f in self.done if f.requests]
        return cut

    def _rewrite(self, n: int, drop: set[int]) -> None:
        index = next(i for i, f in enumerate(self.done) if f.n == n)
        name = self.done[index].name
        path = os.path.join(self.folder, name)
        digest = xxhash.xxh3_128()
        kept = size = 0
        with open(path, "rb") as src, open(path + ".tmp", "wb") as out:
            for i, line in enumerate(src, 1):
                if i not in drop:
                    out.write(line)
                    digest.update(line)
                    kept += 1
                    size += len(line)
        os.replace(path + ".tmp", path)
        if not kept:
            os.unlink(path)
        self.done[index] = BatchFile(n, name, kept, size, digest.hexdigest())

    def _flush(self) -> None:
        assert self._file is not None
        self._file.write(b"".join(self._pending))
        self._pending = []

    def _roll(self) -> None:
        self._close_current()
        self._n += 1
        self._file = open(os.path.join(self.folder, FILE_NAME.format(self._n)), "wb")
        self._requests = self._bytes = 0
        self._hash = xxhash.xxh3_128()

    def _close_current(self) -> None:
        if self._file is not None:
            self._flush()
            self._file.close()
            self.done.append(BatchFile(self._n, FILE_NAME.format(self._n), self._requests,
                                       self._bytes, self._hash.hexdigest()))
            self._file = None

    def close(self) -> list[BatchFile]:
        self._close_current()
        return self.done

    def abort(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def run(opts: Options) -> PrepareReport:
    """Prepare ``opts.folder`` from ``opts.input``; return the report (also written there)."""
    started = time.perf_counter()
    if opts.config.api.batch_none:
        raise UsageError(f"--provider {opts.config.provider}: {opts.config.api.batch_none}.")
    limit = limits(opts)
    if limit.requests < 1 or limit.bytes < 1:
        raise UsageError("--max-requests-per-file and --max-bytes-per-file must be positive.")
    check_new_folder(opts.folder)
    check_input(opts.input, "judge states", USAGE.format(input=opts.input))
    store_path, warnings = consulted_store(opts)
    # The folder appears whole or not at all (a folder target, as view's export). Never over
    # a folder that holds anything: a batch prepared there keeps its ids.
    with Transaction([("input", opts.input)], [Target("folder", opts.folder, FOLDER, refusal=(
            lambda _: "is not empty (prepare writes a new folder)"))], force=None) as targets:
        out = targets.open_folder("folder")
        assert out.tmp is not None
        report = _fill(opts, out.tmp, limit, store_path, warnings, started)
    return report


def _fill(opts: Options, tmp: str, limit: formats.Limits, store_path: str | None,
          warnings: list[str], started: float) -> PrepareReport:
    config = opts.config
    provider = config.provider
    counts = PrepareCounts()
    meta = {"provider": provider, "model": config.model, "base_url": config.base_url,
            "temperature": msgspec.json.encode(config.temperature).decode(),
            "max_output_tokens": str(config.max_output_tokens), "config_hash": config.hash,
            "settings": msgspec.json.encode(config.settings()).decode(),
            "input": opts.input, "max_requests_per_file": str(limit.requests),
            "max_bytes_per_file": str(limit.bytes)}
    if store_path is not None:
        meta["store"] = store_path
    manifest = Manifest.create(tmp, meta)
    files = RequestFiles(tmp, limit)
    store = Store(store_path, readonly=True) if store_path else None
    reader = inputs.Reader(opts.max_line_bytes)
    orders = pairs.Orders()
    encode = msgspec.json.Encoder().encode
    request_line = config.api.request_line
    over_limit = 0
    try:
        with open(os.path.join(tmp, REJECTS), "wb") as rejects:
            for item in orders.items(reader.read(opts.input)):
                if isinstance(item, inputs.Exact):
                    manifest.add_exact(item.line, item.raw)
                    counts.exact_verdicts += 1
                    continue
                if isinstance(item, Reject):
                    rejects.write(encode(item) + b"\n")
                    continue
                states = item if isinstance(item, pairs.Pair) else (item,)
                made = [(state, build(config.of(state), state.question, state.state))
                        for state in states]
                written = [None if store is not None and store.has(req.key) else
                           request_line(req.key, req.body) for _, req in made]
                big = next((len(x) for x in written if x is not None and len(x) > limit.bytes),
                           None)
                if big is not None:  # a pair is prepared in both orders or not at all
                    over_limit += len(states)
                    for state, _ in made:
                        rejects.write(encode(_too_big(state, big, limit)) + b"\n")
                    continue
                for (state, req), line in zip(made, written, strict=True):
                    if line is None:
                        counts.stored += 1
                    else:
                        manifest.add_request(bytes.fromhex(req.key), *files.write(line))
                    counts.judge_states += 1
                    manifest.add_state(state.line, bytes.fromhex(req.key), state.case_id,
                                       state.rubric_id, state.rubric_hash, state.state_hash,
                                       bytes(state.exposure), state.allows_na, state.pair)
        files.close()
        counts.duplicates = files.drop(manifest.index_requests())
        counts.requests = sum(f.requests for f in files.done)
        for f in files.done:
            manifest.add_file(f)
        manifest.finish()
    except OSError as exc:
        raise OutputError(f"cannot write {opts.folder}: {exc.strerror or exc}") from exc
    finally:
        files.abort()
        manifest.close()
        if store is not None:
            store.close()
    lines = reader.counts
    counts.lines, counts.blank = lines.lines, lines.blank
    counts.rejected = lines.rejected + over_limit + orders.rejected
    by_kind = dict(lines.rejected_by_kind + orders.rejected_by_kind)
    if over_limit:
        by_kind[OVER_LIMIT] = over_limit
    report = PrepareReport(
        command="batch prepare", evalstream=__version__, input=opts.input, folder=opts.folder,
        judge=config.info,
        format=provider, limits=Limit(limit.requests, limit.bytes), store=store_path,
        counts=counts,
        files=[FileEntry(f.name, f.requests, f.bytes) for f in files.done],
        rejected_by_kind=dict(sorted(by_kind.items())), warnings=warnings,
        seconds=round(time.perf_counter() - started, 3),
        exit_code=EXIT_REJECTS if counts.rejected else EXIT_OK)
    with open(os.path.join(tmp, REPORT), "wb") as out:
        out.write(encode_report(report))
    return report


def _too_big(state: inputs.JudgeState, size: int, limit: formats.Limits) -> Reject:
    return Reject(state.line, state.offset, state.case_id, "$.state", (
        f"The request for this judge state is {size:,} bytes, more than a request file may hold "
        f"({limit.bytes:,} bytes); it cannot be sent in a batch: judge it live with "
        "`evalstream judge`."), raw_text(state.state.encode()))
