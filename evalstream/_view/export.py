"""The static export of ``evalstream view``: a folder of plain HTML pages that works from
``file://`` with no network and no script, to share or archive a review.

It holds the overview, every list (one page a value of each filter: a rubric, a label
source, a ``--by`` group among the 50 largest, a kind) with its first ``limit`` entries,
the rejected lines likewise, and the check page of every entry listed. Check pages are
named by the hash of their key (``verdicts.links.check_page``), so ``agree`` and
``compare`` can link to them. The folder is written whole under a temporary name and
renamed; the same inputs give the same bytes.

A folder that exists is replaced only when it is an earlier export, known by its full
manifest (``evalstream-view.json`` decodes as an export's report whose ``written`` lists
every file it wrote), and holds nothing that manifest does not list: any other file is
named and refused, unless ``--force``. No input of the run may lie inside the folder, even
with ``--force`` (``outputs``: the folder is the run's one target).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace

import msgspec

from evalstream._checks.rubrics import BUILTIN
from evalstream._files.outputs import AtomicFolder, folder_files, some_names
from evalstream._files.transaction import FOLDER, Target, Transaction
from evalstream._verdicts.links import MARKER, check_page
from evalstream._version import __version__
from evalstream._view.check import check_page as render_check
from evalstream._view.index import ROLES, Options, split_key
from evalstream._view.links import ExportLinks
from evalstream._view.lists import DIMENSIONS, Filters
from evalstream._view.pages import Site, list_page, overview, rejects_page

DEFAULT_LIMIT = 100
MAX_GROUP_PAGES = 50  # --by groups with pages of their own, the largest first


class ListExport(msgspec.Struct):
    """One list in the export: its entries, and the pages written for it."""

    entries: int
    pages: int  # list pages (all entries, and one a filter value)


class ExportReport(msgspec.Struct, omit_defaults=True):
    """What an export wrote (also the folder's ``evalstream-view.json``, without timings)."""

    command: str
    evalstream: str
    folder: str
    verdicts: str
    cases: str
    compare: str | None
    states: str | None
    limit: int
    lists: dict[str, ListExport]
    rejects: int
    checks: int  # check pages
    files: int  # every file written, the marker included
    rejected_lines: int
    exit_code: int
    seconds: float = 0.0
    # Every file written but the marker, sorted: how a later export knows what it may replace.
    written: list[str] = msgspec.field(default_factory=list)


@dataclass
class _Plan:
    lists: dict[tuple[str, str, str], str]  # (list, dimension, value) -> file
    rejects: dict[tuple[str, str], str]  # (dimension, value) -> file
    keys: dict[int, str]  # check key -> page file
    names: dict[int, tuple[str, str]]  # check key -> (case id, rubric id)


def _variants(site: Site, name: str) -> list[tuple[str, str, Filters]]:
    """(dimension, value, filters) of every page of one list: all entries, then one page a
    value of each filter."""
    entries = site.lists[name]
    out = [("", "", Filters())]
    for dim in DIMENSIONS:
        counts = entries.counts(site.index, dim)
        if dim == "group":
            largest = sorted(counts, key=lambda item: -item[1])[:MAX_GROUP_PAGES]
            counts = [c for c in counts if c in largest]
        out += [(dim, value, Filters(**{dim: value})) for value, _ in counts]
    return out


def _plan(site: Site, limit: int) -> _Plan:
    ix, src = site.index, site.source
    plan = _Plan({}, {}, {}, {})
    for name in site.lists.available():
        entries = site.lists[name]
        for dim, value, filters in _variants(site, name):
            file = f"lists/{name}.html"
            if dim:
                code = entries.names(ix, dim).index(value)
                file = f"lists/{name}.{dim}-{code}.html"
            plan.lists[(name, dim, value)] = file
            positions = entries.select(ix, filters)
            if positions is None:
                continue
            for key in entries.keys[positions[:limit]].tolist():
                if key not in plan.keys:
                    row, rubric = split_key(key)
                    ids = (src.case_id(row), ix.rubric_names.names[rubric])
                    plan.names[key] = ids
                    plan.keys[key] = check_page(*ids)
    plan.rejects[("", "")] = "lists/rejects.html"
    rejects = site.lists.rejects
    for value, _ in rejects.counts("file"):
        plan.rejects[("file", value)] = f"lists/rejects.file-{ROLES.index(value)}.html"
    for value, _ in rejects.counts("kind"):
        code = rejects.names("kind").index(value)
        plan.rejects[("kind", value)] = f"lists/rejects.kind-{code}.html"
    return plan


def outputs(opts: Options, folder: str, force: bool = False) -> Transaction:
    """The export folder as the run's one target, checked before anything is read: refused
    (UsageError) when it holds one of the inputs (even with ``force``) or exists holding
    files no earlier export wrote (unless ``force``)."""
    rubrics = opts.rubrics.sources if opts.rubrics is not None else ()
    return Transaction([("verdicts file", opts.verdicts),
                        *(("cases file", c) for c in opts.case_files()),
                        ("states file", opts.states), ("--compare file", opts.compare),
                        ("--compare-cases file", opts.compare_cases),
                        *(("rubric file", r) for r in rubrics if r != BUILTIN)],
                       [Target("export", folder, FOLDER, refusal=unexported)], force).check()


def unexported(folder: str) -> str | None:
    """What ``folder`` holds that no earlier export wrote, said for people; None when its
    marker is an export's full manifest and lists everything in it."""
    try:
        names = folder_files(folder)
    except OSError as exc:
        return f"cannot be listed whole ({exc.strerror or exc})"
    if MARKER not in names:
        return f"holds {some_names(names)}, which no export wrote (there is no {MARKER})"
    try:
        with open(os.path.join(folder, MARKER), "rb") as f:
            manifest: ExportReport | None = msgspec.json.decode(f.read(), type=ExportReport)
    except (OSError, msgspec.DecodeError):
        manifest = None
    if manifest is None or manifest.command != "view" or not manifest.written:
        return (f"holds {some_names(names)}, and its {MARKER} is not an export's list of the "
                "files it wrote (an export by an earlier version, or not an export)")
    others = [n for n in names if n not in {*manifest.written, MARKER}]
    if others:
        return (f"holds {some_names(others)}, which the earlier export there did not write (its "
                f"{MARKER} lists every file it wrote)")
    return None


def export(site: Site, folder: str, out: AtomicFolder,
           limit: int = DEFAULT_LIMIT) -> ExportReport:
    """Write the export of ``folder`` into ``out`` (its folder target, opened in the run's
    transaction, ``outputs``, which commits it); OutputError when it cannot."""
    started = time.perf_counter()
    ix = site.index
    plan = _plan(site, limit)
    links = ExportLinks(0, set(plan.keys.values()), plan.lists, plan.rejects)
    top, below = replace(site, links=links), replace(site, links=links.at(1))
    out.write("index.html", overview(top, timings=False).encode())
    counts: dict[str, ListExport] = {}
    for name in site.lists.available():
        written = 0
        for (list_name, dim, value), file in plan.lists.items():
            if list_name != name:
                continue
            filters = Filters(**{dim: value}) if dim else Filters()
            html, _ = list_page(below, name, filters, 1, limit=limit)
            out.write(file, html.encode())
            written += 1
        counts[name] = ListExport(len(site.lists[name]), written)
    for (dim, value), file in plan.rejects.items():
        out.write(file, rejects_page(below, value if dim == "file" else None,
                                     value if dim == "kind" else None, 1,
                                     limit=limit).encode())
    for key in sorted(plan.keys):
        case_id, rubric_id = plan.names[key]
        check = render_check(below, case_id, rubric_id)
        assert check is not None  # every listed key has a page
        out.write(plan.keys[key], check.encode("utf-8", "replace"))
    rejected = sum(f.rejected for f in ix.files.values())
    report = ExportReport(
        command="view", evalstream=__version__, folder=folder, verdicts=ix.options.verdicts,
        cases=ix.options.cases, compare=ix.options.compare, states=ix.options.states,
        limit=limit, lists=counts, rejects=len(plan.rejects), checks=len(plan.keys),
        files=len(out.written) + 1, rejected_lines=rejected, exit_code=1 if rejected else 0,
        written=sorted(out.written))
    out.write(MARKER, msgspec.json.format(msgspec.json.encode(
        replace_seconds(report)), indent=2) + b"\n")
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def replace_seconds(report: ExportReport) -> ExportReport:
    """The report without its timing, as the folder keeps it (the same bytes every time)."""
    return msgspec.structs.replace(report, seconds=0.0)
