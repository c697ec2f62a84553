"""The commands that report: ``stats``, ``agree``, ``compare``, and a saved stats JSON or run
report rendered again (``render_stats``, ``read_report``).

Each run plans its report (text, markdown or JSON, to a file or stdout) and HTML page as
targets of its own transaction, with its rejects (``_files.transaction.report_targets``),
checks them before anything is read and opens them at once; the rendering is done here, the
module above ``_render/``, and everything is committed together, all or none. A table for
stdout is printed once the run is committed, fitted to the terminal.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalstream._api.checked import (
    MAX_LINE_BYTES,
    MAX_OUTPUT_TOKENS,
    MAX_TOKENS,
    TOKENIZER,
    Engine,
    Inputs,
    Path,
    Progress,
    ReportFormat,
    Tokenizer,
    case_inputs,
    front_door,
    inputs,
    options,
    path,
)

if TYPE_CHECKING:
    from evalstream._checks.report import RunReport
    from evalstream._files.outputs import AtomicOutput
    from evalstream._render.tables import Block
    from evalstream._stats.stats import DatasetStats
    from evalstream._verdicts.agree import AgreeReport
    from evalstream._verdicts.compare import CompareReport
    from evalstream._verdicts.judges import JudgesReport
    from evalstream._verdicts.panel import RubricPanel

TEXT_WIDTH = 100  # the width of a table written to a file
REPORT_BYTES = 64 << 20  # a .json input larger than this is not read as a saved report


@dataclass(frozen=True)
class Shown:
    """How a command's result is shown: its blocks (tables, markdown) and its HTML page, each
    with links relative to ``base``, the folder of the file they are written in; its JSON."""

    blocks: Callable[[Any, str], list[Block]]
    page: Callable[[Any, str], str]
    encode: Callable[[Any], bytes]

    def write(self, fmt: str, output: str | None,
              html: str | None) -> Callable[[Any, dict[str, AtomicOutput]], None]:
        """The writer the library's run calls with its result and the report targets it
        opened (``_files.transaction.open_reports``)."""
        def write(result: Any, opened: dict[str, AtomicOutput]) -> None:
            if "html" in opened:
                opened["html"].write(self.page(result, _folder(html)).encode())
            if "output" in opened:
                opened["output"].write(self.rendered(result, fmt, _folder(output)))
        return write

    def rendered(self, result: Any, fmt: str, base: str = ".") -> bytes:
        """The report in ``fmt`` as it is written to a file (a table ``TEXT_WIDTH`` wide)."""
        return self.encode(result) if fmt == "json" else render_text(self.blocks(result, base),
                                                                     fmt)

    def show(self, result: Any, fmt: str, output: str | None) -> None:
        """The table on the terminal, when that is where the result goes (after the commit)."""
        if fmt == "table" and output == "-":
            import sys

            from evalstream._render.tables import print_blocks

            print_blocks(self.blocks(result, "."), sys.stdout)


def _folder(path: str | None) -> str:
    """Where links in a file written at ``path`` start from."""
    return "." if path in (None, "-") else os.path.dirname(path) or "."


def render_text(blocks: list[Block], fmt: str) -> bytes:
    """Blocks as markdown, or as plain-text tables ``TEXT_WIDTH`` wide (``table``)."""
    from evalstream._render.tables import render_format

    return render_format(blocks, fmt, TEXT_WIDTH)


def stats_shown(sections: Sequence[str] | None) -> Shown:
    """How stats shows a result (a dataset's stats or a run report): only ``sections`` of its
    table (see ``_render.stats.blocks``)."""
    from evalstream._checks.report import encode
    from evalstream._render.stats import blocks

    def page(result: Any, _: str) -> str:
        from evalstream._render.stats_html import page as stats_page  # only with --html

        return stats_page(result)

    return Shown(lambda result, _: blocks(result, sections), page, encode)


@front_door
def stats(input: Inputs, *, by: str | Sequence[str] = "scenario",
          rubric_files: Sequence[Path] = (), max_tokens: int = MAX_TOKENS,
          max_output_tokens: int = MAX_OUTPUT_TOKENS, tokenizer: Tokenizer = TOKENIZER,
          format: ReportFormat = "table",
          output: Path | None = None, html: Path | None = None,
          sections: Sequence[str] | None = (), rejects: Path | None = None,
          workers: int | None = None, engine: Engine = "local", scheduler: str | None = None,
          allow_unknown_fields: bool = False, max_line_bytes: int = MAX_LINE_BYTES,
          force: bool = False, on_progress: Progress | None = None) -> DatasetStats:
    """Run ``stats``: what a dataset holds, grouped by the metadata keys ``by`` (a list, or
    ``"a,b"``): sizes, labels, checks, metadata keys. The report is written only where asked:
    ``output`` (a file, or ``-`` for stdout) in ``format`` (``table``: plain text, on a
    terminal fitted to it; ``markdown``; ``json``), ``html`` a page with charts, ``rejects``
    the rejected lines; all of them, or none, once the whole dataset was read. ``sections``:
    the table's (``()``: the one-screen summary, None: every section; markdown and JSON are
    always complete). ``workers`` None: the CPUs available, for a plain file over 128 MiB.
    Returns the stats."""
    from evalstream._options import OUTPUT_OPTION, REPORT_FORMAT
    from evalstream._stats.stats import StatsOptions, collect, parse_by

    given = options(stats, locals(), rules={"format": REPORT_FORMAT, "output": OUTPUT_OPTION})
    fmt, out, shown_sections = given["format"], given["output"], given.pop("sections")
    shown = stats_shown(shown_sections if fmt == "table" else None)
    # A list of keys is read as the command line's "a,b": one way to read them.
    given["by"] = parse_by(",".join(given["by"]))
    result = collect(StatsOptions(**inputs(input), **given), on_progress,
                     shown.write(fmt, out, given["html"]))
    shown.show(result, fmt, out)
    return result


@front_door
def read_report(path: Path) -> DatasetStats | RunReport | None:
    """The stats JSON (``stats --format json``) or build/validate run report saved at
    ``path``, or None when the file is neither (a dataset: ``stats`` reads it). A stats JSON of
    another version, or another command's JSON, is a UsageError or WrongFileError naming the
    file."""
    from evalstream._options import check

    found = check("input", path)
    if found == "-" or not found.endswith(".json"):
        return None
    import msgspec

    from evalstream._checks.report import RunReport
    from evalstream._files.lines import InputError
    from evalstream._stats.stats import SHAPE, DatasetStats
    from evalstream.errors import UsageError, WrongFileError

    try:
        with open(found, "rb") as f:
            head = f.read(REPORT_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read {found}: {exc.strerror or exc}") from exc
    if len(head) > REPORT_BYTES:
        return None
    try:
        return msgspec.json.decode(head, type=DatasetStats)
    except msgspec.DecodeError:
        pass
    shape = _shape(head)
    if shape is not None and shape != SHAPE:
        raise UsageError(f"{found} is a stats JSON of shape {shape!r}, written by another "
                         f"version of evalstream (this one reads {SHAPE!r}); run stats on the "
                         "dataset again.")
    try:
        return msgspec.json.decode(head, type=RunReport)
    except msgspec.DecodeError:
        pass
    # Another command's JSON (agree, compare, judge, convert): say so, do not read it as cases.
    try:
        other = msgspec.json.decode(head)
    except msgspec.DecodeError:
        return None
    if isinstance(other, dict) and isinstance(other.get("command"), str) and "evalstream" in other:
        raise WrongFileError(f"{found} is the JSON of `evalstream {other['command']}`, not cases, "
                             "a stats JSON or a build/validate report; stats reads and renders "
                             "those.")
    return None


def _shape(head: bytes) -> str | None:
    """The ``shape`` of a stats JSON of any version, or None."""
    import msgspec

    class Shaped(msgspec.Struct):
        shape: str

    try:
        shape = msgspec.json.decode(head, type=Shaped).shape
    except msgspec.DecodeError:
        return None
    return shape if shape.startswith("evalstream.stats/") else None


@front_door
def render_stats(report: Path, *, format: ReportFormat = "table", output: Path | None = None,
                 html: Path | None = None, sections: Sequence[str] | None = (),
                 force: bool = False) -> DatasetStats | RunReport:
    """Render a saved stats JSON or run report again (``evalstream stats REPORT.json``), as
    ``stats`` renders a dataset's: ``output``, ``format``, ``html`` and ``sections`` as there.
    Returns what the file holds; one that is neither, or that evalstream cannot render, is a
    UsageError naming it."""
    from evalstream._files.transaction import Transaction, open_reports, report_targets
    from evalstream._options import OUTPUT_OPTION, REPORT_FORMAT
    from evalstream._stats.stats import DatasetStats, check_shape
    from evalstream.errors import UsageError

    given = options(render_stats, locals(), rules={"format": REPORT_FORMAT,
                                                   "output": OUTPUT_OPTION})
    source, fmt, out = path("input", report), given["format"], given["output"]
    shown = stats_shown(given["sections"] if fmt == "table" else None)
    with Transaction([("input", source)], report_targets(out, fmt, given["html"], None),
                     given["force"]) as targets:
        opened = open_reports(targets, fmt)
        loaded = read_report(source)
        if loaded is None:
            raise UsageError(f"{source} is not a stats JSON or a run report; give it to "
                             "evalstream.stats, which reads datasets.")
        try:
            if isinstance(loaded, DatasetStats):
                check_shape(loaded)
            shown.write(fmt, out, given["html"])(loaded, opened)
            if not opened:  # the table on the terminal: rendered here first, to be sure
                shown.blocks(loaded, ".")
        except (ValueError, KeyError, IndexError, TypeError, ZeroDivisionError) as exc:
            raise UsageError(f"{source} is not a report evalstream can render ({exc}); render "
                             "the stats JSON or run report evalstream wrote, or run stats on "
                             "the dataset again.") from None
    shown.show(loaded, fmt, out)
    return loaded


@front_door
def agree(verdicts: Path, cases: Inputs, *, by: str | None = None, confidence: float = 0.95,
          format: ReportFormat = "table", output: Path | None = None, html: Path | None = None,
          max_ids: int = 20, rejects: Path | None = None, max_unscored_rate: float | None = None,
          view: Path | None = None, rubric_files: Sequence[Path] = (),
          states: Path | None = None, fail_on_stale: bool = False,
          allow_unknown_fields: bool = False,
          max_line_bytes: int = MAX_LINE_BYTES, force: bool = False, estimate: bool = False,
          target_width: float = 0.05, to_label: int | None = None,
          to_label_output: Path | None = None) -> AgreeReport:
    """Run ``agree``: how well a judge's verdicts agree with the cases' expected labels, per rubric,
    label source and ``by`` group (one metadata key), each figure with the labels it covers and what
    it left out; ``cases`` one path or glob, or a list of them, read in order as one, as ``build``
    reads its inputs. The report is written only where asked, as ``stats`` writes it (``output``,
    ``format``, ``html``, ``rejects``); ``view``, a folder of ``evalstream view --export``, links
    each listed id to its page. Stale verdicts (judged on another state or rubric than build makes
    of the cases today) are found by rebuilding the states with ``rubric_files`` (``--rubrics``;
    default the built-in set), or from build's output (``states``), counted, listed and left out.
    Where verdicts carry ``confidence``, the report says how well calibrated it is; ``estimate``
    adds the corrected pass rates (PPI++) with the labels more that would make each interval
    ``target_width`` wide; ``to_label`` chooses that many checks without a label whose label would
    help most, and writes their cases to ``to_label_output`` (stale verdicts are left out of all
    three, as of agree's other figures). Returns the report (``exit_code`` 1: lines rejected,
    unscored verdicts above ``max_unscored_rate``, or with ``fail_on_stale`` a stale verdict)."""
    from evalstream._options import ONE_KEY, OUTPUT_OPTION, REPORT_FORMAT
    from evalstream._render.sureness import blocks, page
    from evalstream._verdicts import sureness
    from evalstream._verdicts.agree import AgreeOptions, Extensions, encode, run
    from evalstream._verdicts.panel import PanelExtension

    given = options(agree, locals(), rules={"format": REPORT_FORMAT, "output": OUTPUT_OPTION,
                                            "by": (None, ONE_KEY)})
    shown = Shown(blocks, page, encode)
    # A panel's verdicts (judge --jury, --samples) add each juror and their agreement; the
    # verdicts' confidence, --estimate and --to-label add the sureness section (issue 29).
    panel = PanelExtension(given["max_ids"], given["confidence"])
    named = [str(c) for c in cases] if isinstance(cases, (list, tuple)) else [str(cases)]
    sure = sureness.SurenessExtension(sureness.options(given, named))
    result = run(AgreeOptions(verdicts=path("verdicts", verdicts), **case_inputs(cases),
                              more_targets=sureness.targets(sure.options), **given),
                 shown.write(given["format"], given["output"], given["html"]),
                 Extensions(panel, sure))
    shown.show(result, given["format"], given["output"])
    return result


@front_door
def agree_judges(runs: Sequence[Path], cases: Inputs, *,
                 prices: Mapping[str, tuple[float, float]] | Sequence[str] | None = None,
                 confidence: float = 0.95, format: ReportFormat = "table",
                 output: Path | None = None, html: Path | None = None,
                 rejects: Path | None = None, max_unscored_rate: float | None = None,
                 rubric_files: Sequence[Path] = (), states: Path | None = None,
                 fail_on_stale: bool = False,
                 allow_unknown_fields: bool = False, max_line_bytes: int = MAX_LINE_BYTES,
                 force: bool = False) -> JudgesReport:
    """Run ``agree RUN_A RUN_B ... --cases CASES``: several judge runs over the same states
    side by side, each counted against the cases' labels as ``agree`` counts one file; per
    rubric one row per run, the best Cohen's kappa first, with its coverage (over how many
    labels, the accuracy over all of them), its unscored rate and its tokens and cost per
    1,000 judge states (``prices``: per model, ``{"gpt-4.1-mini": (0.4, 1.6)}`` or
    ``["gpt-4.1-mini=0.4,1.6"]``, USD per million tokens); ``cases`` as in ``agree``. Each
    run's stale verdicts are found as ``agree`` finds them (``rubric_files``, ``states``),
    counted and left out of its row; ``fail_on_stale``: exit 1 on one. The report is written
    only where asked, as ``agree`` writes it. Returns the report."""
    from evalstream._options import OUTPUT_OPTION, REPORT_FORMAT, check
    from evalstream._render.judges import blocks, page
    from evalstream._verdicts.judges import JudgesOptions, encode, run

    given = options(agree_judges, locals(), rules={"format": REPORT_FORMAT,
                                                   "output": OUTPUT_OPTION})
    paths = check("runs", list(runs) if isinstance(runs, (list, tuple)) else runs)
    shown = Shown(blocks, page, encode)
    result = run(JudgesOptions(runs=[path("verdicts", p) for p in paths],
                               **case_inputs(cases), **given),
                 shown.write(given["format"], given["output"], given["html"]))
    shown.show(result, given["format"], given["output"])
    return result


@front_door
def panel_agreement(verdicts: Iterable[Mapping[str, Any]], *, confidence: float = 0.95,
                    resamples: int = 1000, max_ids: int = 20) -> list[RubricPanel]:
    """The agreement among a panel's votes, rubric by rubric, from verdict records in memory
    (dicts as ``judge --jury`` or ``--samples`` writes them): Fleiss' kappa and
    Krippendorff's alpha with ``confidence`` bootstrap intervals (``resamples`` draws), and
    the split and unstable states with their first ``max_ids`` ids. Each record is checked
    as ``agree`` checks a verdict line. Each juror against labels: ``agree``."""
    from evalstream._verdicts.panel import panel_agreement as among

    given = options(panel_agreement, locals())
    return among(verdicts, **given)


@front_door
def compare(run_a: Path, run_b: Path, *, include_incomparable: bool = False,
            format: ReportFormat = "table", output: Path | None = None,
            html: Path | None = None, max_ids: int = 20, rejects: Path | None = None,
            max_unscored_rate: float | None = None, view: Path | None = None,
            cases: Path | None = None, rubric_files: Sequence[Path] = (),
            states: Path | None = None, fail_on_stale: bool = False,
            allow_unknown_fields: bool = False, max_line_bytes: int = MAX_LINE_BYTES,
            force: bool = False) -> CompareReport:
    """Run ``compare``: what changed between two judge runs, pair by pair (flips, pass rates,
    McNemar's test, keys in one run only). The report is written only where asked, as
    ``agree`` writes it. With ``cases`` (their states rebuilt with ``rubric_files``, default
    the built-in set) or ``states`` (build's output), each run's stale verdicts are counted
    and listed (``fail_on_stale``: exit 1 when there is one). Returns the report."""
    from evalstream._options import CASES_OPTION, OUTPUT_OPTION, REPORT_FORMAT
    from evalstream._render.agree_html import compare_page
    from evalstream._render.compare import blocks
    from evalstream._verdicts.compare import CompareOptions, encode, run

    given = options(compare, locals(), rules={"format": REPORT_FORMAT, "output": OUTPUT_OPTION,
                                              "cases": CASES_OPTION})
    shown = Shown(blocks, compare_page, encode)
    result = run(CompareOptions(run_a=path("run_a", run_a), run_b=path("run_b", run_b),
                                **given), shown.write(given["format"], given["output"],
                                                      given["html"]))
    shown.show(result, given["format"], given["output"])
    return result
