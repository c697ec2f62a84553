"""``evalstream view`` as functions: index the files, then serve the pages or export them.
The command line and the Python API (``evalstream.export_view``, ``evalstream.serve_view``)
both call these."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from evalstream._view.export import ExportReport
from evalstream._view.index import Index, Options, ProgressFn, build
from evalstream._view.kept import kept_or_built
from evalstream._view.links import Links
from evalstream._view.lists import Lists
from evalstream._view.pages import Site
from evalstream._view.records import Source
from evalstream.errors import UsageError


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
