"""``evalstream view`` as functions: index the files, then serve the pages or export them.
The command line and the Python API (``evalstream.export_view``, ``evalstream.serve_view``)
both call these."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import msgspec

from evalstream._checks.encodings import DEFAULT, ENCODINGS
from evalstream._files.lines import Chunk, read_chunks
from evalstream._view.export import ExportReport
from evalstream._view.index import Index, Options, ProgressFn, build
from evalstream._view.kept import kept_or_built
from evalstream._view.links import Links
from evalstream._view.lists import Lists
from evalstream._view.pages import Site
from evalstream._view.records import Source
from evalstream.errors import UsageError

# How far into the states or verdicts to look for a record that names its tokenizer: build
# names it in every judge state, and judge copies it into every verdict, so the first
# record does; verdicts of another tool (convert's) name none, and are not read to the end.
LOOK_LINES = 1_000


class _Counted(msgspec.Struct):
    tokenizer: str | None = None


class _Exposure(msgspec.Struct):
    tokens: _Counted | None = None


class _Recorded(msgspec.Struct):
    exposure: _Exposure | None = None


def recorded_tokenizer(opts: Options) -> str:
    """The tokenizer build counted with, as its records name it (``exposure.tokens
    .tokenizer``): the first that names one of the judge states (``--states``: build's own
    output), else of the verdicts (judge copies each state's exposure), among their first
    ``LOOK_LINES`` lines; build's default when none does. view decides which checks are over
    the budget with it, as build did: no option to get wrong. A file that cannot be read is
    left to the index, whose checks say why."""
    decode = msgspec.json.Decoder(_Recorded).decode
    for path in (opts.states, opts.verdicts):
        for line in _first_lines(path, opts.max_line_bytes):
            try:
                exposure = decode(line).exposure
            except (msgspec.DecodeError, UnicodeDecodeError):
                continue  # a reject, which the index explains
            name = exposure.tokens.tokenizer if exposure and exposure.tokens else None
            # A name evalstream does not count with is no build's (view shows any data, a
            # hostile one too, as it is: the record's own page names it).
            if name is not None and name in ENCODINGS:
                return name
    return DEFAULT


def _first_lines(path: str | None, max_line_bytes: int) -> Iterator[bytes]:
    """The first ``LOOK_LINES`` lines of a plain file; none of anything the index
    refuses (stdin, a compressed file, a FIFO, a missing file) and no line too long."""
    if path is None or path.endswith((".gz", ".zst")) or not os.path.isfile(path):
        return
    with open(path, "rb") as f:
        for item in read_chunks(f, max_line_bytes):
            if type(item) is not Chunk:
                continue  # a line over --max-line-bytes: the index rejects it
            for n, line in enumerate(item.lines, item.line):
                if n > LOOK_LINES:
                    return
                yield line


def check_options(opts: Options) -> None:
    """UsageError for options that cannot work, before any file is read."""
    if "," in opts.by or not opts.by.strip("."):
        raise UsageError(f"--by takes one metadata key (dots reach nested metadata), not "
                         f"{opts.by!r}.")
    if opts.max_tokens < 1 or opts.max_output_tokens < 1:
        raise UsageError("--max-tokens and --max-output-tokens must be positive.")


@contextmanager
def open_site(opts: Options, on_progress: ProgressFn | None = None) -> Iterator[Site]:
    """Index the files and yield the site (its files open for reading until the end)."""
    check_options(opts)
    opts = dataclasses.replace(opts, tokenizer=recorded_tokenizer(opts))
    index = kept_or_built(opts, lambda: build(opts, on_progress))
    with Source(index) as source:
        yield Site(index, source, Lists(index), Links())


def export_view(opts: Options, folder: str, limit: int, on_progress: ProgressFn | None = None,
                on_index: Callable[[Index], None] | None = None,
                force: bool = False) -> ExportReport:
    """Index, then write the static export; returns the ``ExportReport``. The folder is
    checked first (``view.export.outputs``): ``force`` replaces one of other files."""
    from evalstream._view.export import export, outputs

    if limit < 1:
        raise UsageError("--limit must be 1 or more.")
    with outputs(opts, folder, force) as targets, open_site(opts, on_progress) as site:
        if on_index is not None:
            on_index(site.index)
        return export(site, folder, targets.open_folder("export"), limit)


def serve_view(opts: Options, host: str = "127.0.0.1", port: int | None = None,
               open_browser: bool = True, on_progress: ProgressFn | None = None,
               on_index: Callable[[Index], None] | None = None,
               announce: Callable[[str], None] | None = None) -> int:
    """Index, then serve the pages until Ctrl-C; returns 0 (``port`` None: the first free
    of 8765-8774)."""
    from evalstream._view.server import serve

    with open_site(opts, on_progress) as site:
        if on_index is not None:
            on_index(site.index)
        return serve(site, host, port, open_browser, announce)
