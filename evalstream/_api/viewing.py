"""The review pages of ``evalstream view``: ``export_view`` (``view --export``, a static
folder) and ``serve_view`` (``view``, a local server). Two functions rather than one with an
``export=`` switch: they take different options and return different things."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from evalstream._api.checked import (
    MAX_LINE_BYTES,
    MAX_OUTPUT_TOKENS,
    MAX_TOKENS,
    Inputs,
    Path,
    case_inputs,
    front_door,
    options,
    path,
)

if TYPE_CHECKING:
    from evalstream._view.export import ExportReport
    from evalstream._view.index import Index
    from evalstream._view.index import Options as ViewOptions

ViewProgress = Callable[[str, int, int | None], None]  # (file's role, bytes read, in all)


def _index_options(verdicts: Path, cases: Inputs, checked: dict[str, Any]) -> ViewOptions:
    """What to index: the files and the options both functions share (taken out of
    ``checked``), the rubric files loaded; the cases one path or glob, or several read in
    order as one, as agree takes them."""
    from evalstream._checks.rubrics import load_rubrics
    from evalstream._view.index import Options

    files = checked.pop("rubric_files")
    shared = {name: checked.pop(name) for name in ("states", "compare", "compare_cases",
                                                   "max_tokens", "max_output_tokens", "by",
                                                   "allow_unknown_fields", "max_line_bytes",
                                                   "keep_index")}
    return Options(verdicts=path("verdicts", verdicts), **case_inputs(cases),
                   rubrics=load_rubrics(files) if files else None, **shared)


@front_door
def export_view(verdicts: Path, cases: Inputs, folder: Path, *, states: Path | None = None,
                compare: Path | None = None, compare_cases: Path | None = None,
                rubric_files: Sequence[Path] = (),
                max_tokens: int = MAX_TOKENS, max_output_tokens: int = MAX_OUTPUT_TOKENS,
                by: str = "scenario", limit: int = 100,
                allow_unknown_fields: bool = False, max_line_bytes: int = MAX_LINE_BYTES,
                keep_index: bool = False, force: bool = False,
                on_progress: ViewProgress | None = None,
                on_index: Callable[[Index], None] | None = None) -> ExportReport:
    """Write the pages of ``evalstream view`` as a static folder (``view --export``): the lists
    with their first ``limit`` entries (and of each filter value), a page for each, from
    ``file://``. ``states`` (build's output), ``compare`` (another run's verdicts),
    ``compare_cases`` (run B's cases, beside run A's of pairwise verdicts), ``rubric_files``
    (``--rubrics``), ``max_tokens``, ``max_output_tokens`` and ``by`` (the group filter's
    metadata key) as the command's; ``keep_index`` (``--keep-index``) keeps the index beside
    the verdicts (``VERDICTS.view-index``) and reuses it while every file and option is the
    one indexed. Returns the report (``exit_code`` 1 when lines were rejected); the folder
    appears only if the whole export succeeds, and replaces only an earlier export holding
    nothing else (``force``: any folder without an input).
    ``on_index(index)`` is called once the files are indexed."""
    from evalstream._options import ONE_KEY
    from evalstream._view.run import export_view as export

    checked = options(export_view, locals(), rules={"by": (None, ONE_KEY)})
    opts = _index_options(verdicts, cases, checked)
    return export(opts, path("folder", folder), checked["limit"], on_progress, on_index,
                  force=checked["force"])


@front_door
def serve_view(verdicts: Path, cases: Inputs, *, states: Path | None = None,
               compare: Path | None = None, compare_cases: Path | None = None,
               rubric_files: Sequence[Path] = (),
               max_tokens: int = MAX_TOKENS, max_output_tokens: int = MAX_OUTPUT_TOKENS,
               by: str = "scenario", host: str = "127.0.0.1",
               port: int | None = None, open_browser: bool = True,
               allow_unknown_fields: bool = False, max_line_bytes: int = MAX_LINE_BYTES,
               keep_index: bool = False, on_progress: ViewProgress | None = None,
               on_index: Callable[[Index], None] | None = None) -> int:
    """Serve the pages of ``evalstream view`` until Ctrl-C (then return 0); the address to
    open, with its access token, is printed on stderr. ``port`` None: the first free of
    8765-8774 (0: any free port); ``open_browser`` opens it. The other options as
    ``export_view``'s."""
    import sys

    from evalstream._options import ONE_KEY
    from evalstream._view.run import serve_view as serve

    def announce(url: str) -> None:
        print(f"view: serving at {url}  (Ctrl-C stops it)", file=sys.stderr, flush=True)

    checked = options(serve_view, locals(), rules={"by": (None, ONE_KEY)})
    opts = _index_options(verdicts, cases, checked)
    return serve(opts, checked["host"], checked["port"], checked["open_browser"], on_progress,
                 on_index, announce)
