"""The pages of ``evalstream view`` other than a check's: the overview, the lists and the
rejects. Built on ``render.html.Page`` with the strict policy (no script, no style
attribute, nothing loaded); every text from a file goes through ``view.text``.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

from evalstream._render.html import Page
from evalstream._verdicts.records import STATUSES
from evalstream._version import __version__
from evalstream._view.index import (
    CASES,
    COMPARE,
    COMPARE_CASES,
    LABEL_STATUSES,
    NONE,
    ROLES,
    SOURCES,
    STATES,
    VERDICTS,
    Index,
    split_key,
)
from evalstream._view.links import Links
from evalstream._view.lists import (
    DIMENSIONS,
    PAGE_SIZE,
    SPECS,
    EntryList,
    Filters,
    Lists,
    page_of,
)
from evalstream._view.records import Source
from evalstream._view.text import attr, excerpt, inline, plain

if TYPE_CHECKING:
    import numpy as np

MAX_OPTIONS = 200  # values offered in one filter's menu (the largest first)
MAX_OPTION_CHARS = 1_000  # longer values are left out of menus (a URL can still name them)
KEY_CHARS = 48  # characters of an id or a group in a list cell
CSS = """
main { max-width: 1440px; }
.top { display: flex; flex-wrap: wrap; gap: 4px 18px; align-items: baseline;
       padding: 9px 28px; border-bottom: 1px solid var(--line); background: #f6f8fa;
       font-size: 13px; }
.top b { margin-right: 6px; }
.top a { color: #0969da; text-decoration: none; }
.top a.here { color: var(--ink); font-weight: 600; }
a { color: #0969da; }
bdi, .d { unicode-bidi: isolate; overflow-wrap: anywhere; }
.muted { color: var(--muted); }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12px;
         font-weight: 600; border: 1px solid #d0d7de; background: #eaeef2; color: #424a53;
         white-space: nowrap; }
.s-pass { background: #dafbe1; color: #116329; border-color: #aceebb; }
.s-fail { background: #ffebe9; color: #a40e26; border-color: #ffcecb; }
.s-unscored { background: #fff8c5; color: #7d4e00; border-color: #eedf8f; }
.s-missed, .s-alarm { background: #ffebe9; color: #a40e26; border-color: #ffcecb; }
.ctl { display: inline-block; border: 1px solid #cf222e; color: #cf222e; border-radius: 3px;
       font: 10px/1.3 ui-monospace, monospace; padding: 0 2px; margin: 0 1px;
       unicode-bidi: isolate; white-space: nowrap; }
table.list { width: 100%; }
table.list td { overflow-wrap: anywhere; }
table.list td.key { white-space: nowrap; overflow-wrap: normal; }
table.list td.excerpt { max-width: 36em; color: #30363d; }
form.filters, div.filters { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: end;
       margin: 12px 0; padding: 10px 12px; background: #f6f8fa; border: 1px solid var(--line);
       border-radius: 6px; font-size: 13px; }
form.filters label { display: flex; flex-direction: column; gap: 2px; color: var(--muted); }
form.filters select, form.filters input { max-width: 22em; font-size: 13px; }
div.filters p { margin: 0; width: 100%; }
div.filters a.here { font-weight: 600; color: var(--ink); text-decoration: none; }
.pager { margin: 10px 0; font-size: 13px; }
.pager a, .pager span { margin-right: 12px; }
.warn { border-left: 4px solid #bf8700; background: #fff8c5; padding: 6px 12px; margin: 8px 0;
        overflow-wrap: anywhere; }
"""


_NUM = ' class="num"'


@dataclass
class Site:
    """What every page needs: the index, its files, its lists, and where links go."""

    index: Index
    source: Source
    lists: Lists
    links: Links


def new_page(site: Site, title: str, subtitle: str | None, here: str, css: str = "") -> Page:
    """A page with the view's styles (and ``css``), the strict policy and the navigation."""
    return Page(plain(title, 300), None if subtitle is None else plain(subtitle, 600),
                css=CSS + css, strict=True, top=top_bar(site, here))


def top_bar(site: Site, here: str) -> str:
    """The navigation bar: the overview, each list and the rejects, with their sizes."""
    links = site.links
    items: list[tuple[str | None, str, str]] = [(links.home(), "overview", "Overview")]
    items += [(links.list(name, Filters()), name,
               f"{SPECS[name].title} ({len(site.lists[name]):,})")
              for name in site.lists.available()]
    items.append((links.rejects(), "rejects", f"Rejected lines ({len(site.lists.rejects):,})"))
    parts = ['<nav class="top"><b>evalstream view</b>']
    for href, name, label in items:
        if href is None:
            parts.append(f'<span class="muted">{escape(label)}</span>')
        else:
            cls = ' class="here"' if name == here else ""
            parts.append(f'<a{cls} href="{attr(href)}">{escape(label)}</a>')
    return "".join(parts) + "</nav>"


def short(value: str, size: int = KEY_CHARS) -> str:
    """A key (id, rubric, group) for a table cell: marked like ``inline``, cut at ``size``
    characters (the check page shows it whole)."""
    return inline(value) if len(value) <= size else inline(value[:size - 1]) + "…"


def badge(status: str | None, extra: str = "") -> str:
    """A coloured status (pass, fail, unscored, na), or a dash."""
    if status is None:
        return '<span class="muted">-</span>'
    cls = f"s-{status}" if status in STATUSES else ""
    return f'<span class="badge {cls}">{inline(status)}{escape(extra)}</span>'


def case_link(site: Site, case_id: str, rubric_id: str, text: str | None = None) -> str:
    href = site.links.check(case_id, rubric_id)
    shown = f"<bdi>{short(text if text is not None else case_id)}</bdi>"
    return f'<a href="{attr(href)}">{shown}</a>' if href else shown


# -- the overview ----------------------------------------------------------------------------------
def overview(site: Site, timings: bool = True) -> str:
    """The first page: what was read, the lists with their sizes, and what to check
    (``timings``: how long the index took; an export leaves them out, for the same bytes)."""
    ix = site.index
    opts = ix.options
    subtitle = f"{opts.verdicts} against the cases of {opts.cases}" + (
        f", compared with {opts.compare}" if opts.compare else "")
    page = new_page(site, "evalstream view", subtitle, "overview")
    lists = site.lists
    cards = [(f"{ix.n_cases:,}", "cases"), (f"{len(ix.run.key):,}", "verdicts")]
    cards += [(f"{len(lists[n]):,}", SPECS[n].title.lower()) for n in lists.available()
              if n != "verdicts"]
    cards.append((f"{len(lists.rejects):,}", "rejected lines"))
    page.cards(cards)
    from evalstream._view import coverage  # coverage first: its warnings lead (issue 25)

    for warning in [*coverage.warnings(ix), *warnings(ix)]:
        page.fragment(f'<p class="warn">{inline(warning)}</p>')
    page.heading("Coverage")
    page.fragment(coverage.table(ix))
    page.heading("Lists")
    rows = []
    for name in lists.available():
        spec = SPECS[name]
        href = site.links.list(name, Filters())
        title = f'<a href="{attr(href)}">{escape(spec.title)}</a>' if href else escape(spec.title)
        rows.append(f'<tr><td>{title}</td><td class="num">{len(lists[name]):,}</td>'
                    f"<td>{escape(spec.blurb)}</td></tr>")
    href = site.links.rejects()
    title = f'<a href="{attr(href)}">Rejected lines</a>' if href else "Rejected lines"
    rows.append(f'<tr><td>{title}</td><td class="num">{len(lists.rejects):,}</td><td>Lines of '
                "any file that are not a case or a verdict, with the line, the field and why "
                "(as build and validate say it).</td></tr>")
    page.fragment('<div class="scroll"><table class="list"><thead><tr><th>list</th>'
                  '<th class="num">entries</th><th>what</th></tr></thead><tbody>'
                  + "".join(rows) + "</tbody></table></div>")
    page.heading("Files")
    page.fragment(files_table(ix, timings))
    page.heading("Rubrics")
    r = ix.rubrics
    page.paragraph(f"{len(r.rubrics)} rubrics from {', '.join(r.sources)} (hash {r.hash}); "
                   f"budget {opts.max_tokens:,} tokens, counted in {opts.tokenizer} (the "
                   "tokenizer build's records name, else build's default). Skipped checks are "
                   "those build skips with this rubric set; give build's --rubrics and "
                   "--max-tokens if it ran with others. " + coverage.stale_note(ix))
    took = f" in {ix.seconds:.2f} s" if timings else ""
    page.paragraph(f"Indexed {ix.lines:,} lines{took}; the index holds {ix.nbytes:,} bytes "
                   f"({ix.nbytes / max(ix.lines, 1):,.0f} a line); records are read from the "
                   f"files when a page shows them. evalstream {__version__}.", note=True)
    return page.html()


def files_table(ix: Index, timings: bool = True) -> str:
    rows = []
    for role in ROLES:
        f = ix.files.get(role)
        if f is None:
            continue
        what = {CASES: "cases", VERDICTS: "verdicts", COMPARE: "verdicts", STATES: "records",
                COMPARE_CASES: "cases"}[role]
        records = f"{f.records:,} {what}"
        if role in (VERDICTS, COMPARE):
            records = f"{f.records - f.judge_states:,} verdicts"
            if f.judge_states:
                records += f" + {f.judge_states:,} judge states (not judged)"
        elif role == STATES:
            records = (f"{f.judge_states:,} judge states + {f.records - f.judge_states:,} exact "
                       "verdicts")
        rows.append(f"<tr><td>{escape(role)}</td><td><bdi>{inline(f.path)}</bdi></td>"
                    f'<td class="num">{f.lines:,}</td><td>{escape(records)}</td>'
                    f'<td class="num">{f.blank:,}</td><td class="num">{f.rejected:,}</td>'
                    f'<td class="num">{f.size:,}</td>'
                    + (f'<td class="num">{f.seconds:.2f}</td>' if timings else "") + "</tr>")
    seconds = '<th class="num">index s</th>' if timings else ""
    return ('<div class="scroll"><table class="list"><thead><tr><th>file</th><th>path</th>'
            '<th class="num">lines</th><th>records</th><th class="num">blank</th>'
            f'<th class="num">rejected</th><th class="num">bytes</th>{seconds}'
            "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
            '<p class="note">lines = records + blank + rejected, for every file.</p>')


def warnings(ix: Index) -> list[str]:
    """What a reviewer should know before trusting the lists."""
    out = []
    if ix.unknown_rubrics:
        named = ", ".join(f"{r} ({n:,})" for r, n in list(ix.unknown_rubrics.items())[:10])
        out.append(f"Records name rubrics that are not in the rubric set: {named}. The skipped "
                   "checks are those of the rubric set; give the --rubrics build used.")
    if ix.rubric_hash_mismatch:
        named = ", ".join(f"{r} ({n:,})" for r, n in ix.rubric_hash_mismatch.items())
        out.append(f"Records carry a rubric_hash other than the rubric set's: {named}: they "
                   "were judged under another version of the rubric.")
    unknown = len(ix.unknown_where)
    if unknown:
        out.append(f"{unknown:,} case ids named by verdicts or states are not cases of "
                   f"{ix.options.cases} (absent, or their line was rejected).")
    return out


# -- lists -----------------------------------------------------------------------------------------
def _options(values: list[tuple[str, int]], chosen: str | None) -> tuple[str, int]:
    """<option>s for a filter menu: the largest values first, at most MAX_OPTIONS."""
    usable = [(v, n) for v, n in values if len(v) <= MAX_OPTION_CHARS]
    usable.sort(key=lambda item: -item[1])
    shown = sorted(usable[:MAX_OPTIONS], key=lambda item: values.index(item))
    if chosen is not None and chosen not in [v for v, _ in shown]:
        shown.append((chosen, 0))
    html = ['<option value="">all</option>']
    for value, n in shown:
        selected = " selected" if value == chosen else ""
        html.append(f'<option value="{attr(value)}"{selected}>{escape(plain(value, 80))} '
                    f"({n:,})</option>")
    return "".join(html), len(values) - len(shown)


def filter_labels(site: Site, entries: EntryList) -> dict[str, str]:
    """What each filter is called on this list."""
    return {"rubric": "rubric", "source": "label source", "group": site.index.options.by,
            "kind": entries.spec.kind_label}


def filter_form(site: Site, entries: EntryList, filters: Filters) -> str:
    """The filters of a list: a GET form (server), or links to one page a value (export)."""
    ix = site.index
    labels = filter_labels(site, entries)
    name = entries.spec.name
    if site.links.forms:
        fields = []
        for dim in DIMENSIONS:
            options, hidden = _options(entries.counts(ix, dim), getattr(filters, dim))
            more = f" ({hidden:,} not listed)" if hidden > 0 else ""
            fields.append(f"<label>{escape(labels[dim])}{escape(more)}"
                          f'<select name="{dim}">{options}</select></label>')
        case = filters.case or ""
        fields.append(f'<label>case id<input name="case" value="{attr(case)}" '
                      'placeholder="exact id" size="24"></label>')
        action = site.links.list(name, Filters()) or ""
        return (f'<form class="filters" method="get" action="{attr(action)}">'
                + "".join(fields) + f'<button type="submit">filter</button>'
                f'<a href="{attr(action)}">clear</a></form>')
    # An export: one pre-rendered page per value of one filter.
    rows = []
    for dim in DIMENSIONS:
        parts = []
        href = site.links.list(name, Filters())
        current = getattr(filters, dim)
        parts.append(_filter_link(href, "all", current is None))
        for value, n in entries.counts(ix, dim):
            href = site.links.list(name, Filters(**{dim: value}))
            if href is not None or value == current:
                parts.append(_filter_link(href, plain(value, 80), value == current, n))
        rows.append(f"<p><b>{escape(labels[dim])}</b>: " + " · ".join(parts) + "</p>")
    rows.append('<p class="note">One page a value; search a case id with your browser\'s find '
                "on the page of all entries, or run <code>evalstream view</code> for any "
                "combination.</p>")
    return '<div class="filters">' + "".join(rows) + "</div>"


def _filter_link(href: str | None, label: str, here: bool, n: int | None = None) -> str:
    count = "" if n is None else f" ({n:,})"
    if here:
        return f'<a class="here">{escape(label)}</a>{count}'
    if href is None:
        return f'<span class="muted">{escape(label)}</span>{count}'
    return f'<a href="{attr(href)}">{escape(label)}</a>{count}'


def pager(site: Site, name: str, filters: Filters, page: int, pages: int, total: int,
          shown: int) -> str:
    if not site.links.forms and shown < total:
        return (f'<p class="pager">The first {shown:,} of {total:,} entries: run <code>evalstream '
                "view</code> (or export with a higher --limit) for the rest.</p>")
    if pages <= 1:
        return f'<p class="pager">{total:,} entries.</p>'
    parts = []
    if page > 1 and (prev := site.links.list(name, filters, page - 1)):
        parts.append(f'<a href="{attr(prev)}">« previous</a>')
    parts.append(f"<span>page {page:,} of {pages:,} ({total:,} entries)</span>")
    if page < pages and (nxt := site.links.list(name, filters, page + 1)):
        parts.append(f'<a href="{attr(nxt)}">next »</a>')
    return '<p class="pager">' + "".join(parts) + "</p>"


@dataclass
class Row:
    """What one list row shows, read from the files on demand."""

    key: int
    case_id: str
    rubric_id: str
    kind: str
    verdict: Any | None  # this run's verdict (typed), None if it has none
    line: int | None
    other: Any | None  # the other run's verdict
    other_line: int | None
    label: tuple[str, str] | None  # (status, source)
    group: str | None
    reason: str | None = None
    tokens: tuple[int, bool] | None = None


def rows(site: Site, entries: EntryList, positions: np.ndarray) -> list[Row]:
    """The rows at these positions of a list, each record read from its file."""
    ix, src = site.index, site.source
    keys = entries.keys[positions]
    at_a = ix.run.find(keys)
    at_b = ix.other.find(keys) if ix.other is not None else None
    at_label = ix.label_of(keys)
    groups = ix.group_of(keys)
    out = []
    for i, key in enumerate(keys.tolist()):
        row, rubric = split_key(key)
        verdict = other = None
        line = other_line = None
        if at_a[i] >= 0:
            verdict, _ = src.verdict(ix.run, int(at_a[i]), VERDICTS)
            line = int(ix.run.line[at_a[i]])
        if at_b is not None and at_b[i] >= 0:
            assert ix.other is not None
            other, _ = src.verdict(ix.other, int(at_b[i]), COMPARE)
            other_line = int(ix.other.line[at_b[i]])
        case_id = (verdict.case_id if verdict is not None else
                   other.case_id if other is not None else src.case_id(row))
        label = None
        if at_label[i] >= 0:
            label = (LABEL_STATUSES[ix.label_status[at_label[i]]],
                     SOURCES[ix.label_source[at_label[i]]])
        group = (None if groups[i] == NONE else ix.groups.names[groups[i]])
        out.append(Row(key, case_id, ix.rubric_names.names[rubric],
                       entries.kind_names[entries.kind[positions[i]]], verdict, line, other,
                       other_line, label, group))
    if entries.spec.name == "skipped":
        _skip_details(ix, out)
    return out


def _skip_details(ix: Index, out: list[Row]) -> None:
    for r in out:
        skip = ix.skip_of(r.key)
        if skip is not None:
            r.reason = skip.reason
            if skip.tokens:
                r.tokens = (skip.tokens, skip.exact)


def _label(label: tuple[str, str] | None) -> str:
    if label is None:
        return '<span class="muted">-</span>'
    return f'{badge(label[0])} <span class="muted">{escape(label[1])}</span>'


def _kind_badge(kind: str) -> str:
    cls = {"missed": "s-missed", "false alarm": "s-alarm"}.get(kind, "")
    return f'<span class="badge {cls}">{short(kind)}</span>'


def _num(value: int | None) -> str:
    return f'<td class="num">{"-" if value is None else f"{value:,}"}</td>'


def list_table(site: Site, name: str, shown: list[Row], first: int) -> str:
    """A list's rows as a table; the columns depend on the list."""
    head = ["#", "case", "rubric"]
    if name == "disagreements":
        head += ["direction", "judge", "label", "group", "rationale", "line"]
    elif name == "flips":
        head += ["change", "this run", "other run", "label", "group", "rationale (this run)",
                 "rationale (other run)"]
    elif name == "unscored":
        head += ["cause", "detail", "label", "group", "line"]
    elif name == "skipped":
        head += ["reason", "tokens", "label", "group"]
    elif name == "stale":
        head += ["change", "judge", "label", "group", "line"]
    elif name == "pairs":
        head += ["disagreement", "run A's first", "run B's first", "label", "group", "line"]
    elif name == "split":  # a panel's votes (issue 26)
        head += ["votes", "decision", "label", "group", "rationale", "line"]
    else:
        head += ["judge", "label", "group", "rationale", "line"]
    numeric = {"#", "line", "tokens"}
    html = ['<div class="scroll"><table class="list"><thead><tr>'
            + "".join(f"<th{_NUM if h in numeric else ''}>{escape(h)}</th>"
                      for h in head) + "</tr></thead><tbody>"]
    for n, r in enumerate(shown, first):
        cells = [f'<td class="num">{n:,}</td>',
                 f'<td class="key">{case_link(site, r.case_id, r.rubric_id)}</td>',
                 f'<td class="key"><bdi>{short(r.rubric_id)}</bdi></td>']
        group = (f'<td class="key"><bdi>{short(r.group)}</bdi></td>' if r.group is not None
                 else '<td class="muted">(not in the cases file)</td>')
        rationale = f'<td class="excerpt">{excerpt(_rationale(r.verdict))}</td>'
        if name == "disagreements":
            cells += [f"<td>{_kind_badge(r.kind)}</td>",
                      f"<td>{badge(_status(r.verdict))}</td>",
                      f'<td class="key">{_label(r.label)}</td>', group, rationale, _num(r.line)]
        elif name == "flips":
            cells += [f"<td>{_kind_badge(r.kind)}</td>",
                      f"<td>{badge(_status(r.verdict))}</td>",
                      f"<td>{badge(_status(r.other))}</td>",
                      f'<td class="key">{_label(r.label)}</td>',
                      group, rationale,
                      f'<td class="excerpt">{excerpt(_rationale(r.other))}</td>']
        elif name == "unscored":
            detail = r.verdict.error.detail if r.verdict is not None and r.verdict.error else None
            cells += [f'<td class="key">{short(r.kind)}</td>',
                      f'<td class="excerpt">{excerpt(detail)}</td>',
                      f'<td class="key">{_label(r.label)}</td>', group, _num(r.line)]
        elif name == "split":
            cells += [f'<td class="key">{short(r.kind)}</td>',
                      f"<td>{badge(_status(r.verdict))}</td>",
                      f'<td class="key">{_label(r.label)}</td>', group, rationale, _num(r.line)]
        elif name == "skipped":
            tokens = "-" if r.tokens is None else (
                f"{r.tokens[0]:,}" if r.tokens[1] else f"≥ {r.tokens[0]:,}")
            cells += [f'<td class="key">{short(r.kind)}</td>',
                      f'<td class="num">{escape(tokens)}</td>',
                      f'<td class="key">{_label(r.label)}</td>', group]
        elif name == "stale":
            cells += [f"<td>{_kind_badge(r.kind)}</td>",
                      f"<td>{badge(_status(r.verdict))}</td>",
                      f'<td class="key">{_label(r.label)}</td>', group, _num(r.line)]
        elif name == "pairs":
            answers = {o.order: o.better for o in r.verdict.pair.orders} \
                if r.verdict is not None and r.verdict.pair is not None else {}
            cells += [f"<td>{_kind_badge(r.kind)}</td>",
                      f'<td class="key">{short(answers.get("ab") or "-")}</td>',
                      f'<td class="key">{short(answers.get("ba") or "-")}</td>',
                      f'<td class="key">{_label(r.label)}</td>', group, _num(r.line)]
        else:
            cells += [f"<td>{badge(_status(r.verdict))}</td>",
                      f'<td class="key">{_label(r.label)}</td>', group, rationale, _num(r.line)]
        html.append("<tr>" + "".join(cells) + "</tr>")
    html.append("</tbody></table></div>")
    return "".join(html)


def _status(verdict: Any | None) -> str | None:
    return None if verdict is None else verdict.status


def _rationale(verdict: Any | None) -> str | None:
    return None if verdict is None else verdict.rationale


def list_page(site: Site, name: str, filters: Filters, page: int,
              limit: int | None = None) -> tuple[str, list[Row]]:
    """One page of a list (``limit``: the export's one page of its first entries), and the
    rows it shows."""
    entries = site.lists[name]
    spec = entries.spec
    labels = filter_labels(site, entries)
    chosen = [f"{labels.get(d, 'case id')} = {v}" for d, v in filters.items()]
    html_page = new_page(site, spec.title, "; ".join(chosen) or None, name)
    html_page.paragraph(spec.blurb)
    html_page.fragment(filter_form(site, entries, filters))
    positions = entries.select(site.index, filters)
    if positions is None:
        html_page.paragraph("No entry: a filter names a value this list does not have (or an "
                            "id that is not a case of any file).")
        return html_page.html(), []
    shown_positions, page, pages = page_of(positions, page, limit)
    shown = rows(site, entries, shown_positions)
    html_page.fragment(pager(site, name, filters, page, pages, len(positions), len(shown)))
    if shown:
        first = (page - 1) * PAGE_SIZE + 1
        html_page.fragment(list_table(site, name, shown, first))
    else:
        html_page.paragraph("No entry.")
    if len(positions) > len(shown) and site.links.forms:
        html_page.fragment(pager(site, name, filters, page, pages, len(positions), len(shown)))
    return html_page.html(), shown


# -- rejects ---------------------------------------------------------------------------------------
def rejects_page(site: Site, file: str | None, kind: str | None, page: int,
                 limit: int | None = None) -> str:
    """Rejected lines of every file, with their sentence; filterable by file and kind."""
    rejects = site.lists.rejects
    chosen = "; ".join(f"{d} = {v}" for d, v in (("file", file), ("kind", kind)) if v)
    html_page = new_page(site, "Rejected lines", chosen or None, "rejects")
    html_page.paragraph("Lines that are not a case, a verdict or a judge state, as build and "
                        "validate reject them: the line, its byte offset, the field and why.")
    html_page.fragment(_reject_filters(site, file, kind))
    positions = rejects.select(file, kind)
    if positions is None or not len(positions):
        html_page.paragraph("No rejected line." if positions is not None
                            else "No entry: a filter names a value no reject has.")
        return html_page.html()
    shown, page, pages = page_of(positions, page, limit)
    parts = [f'<p class="pager">{len(positions):,} rejected lines']
    if pages > 1 and site.links.forms:
        if page > 1:
            parts.append(f' · <a href="{attr(site.links.rejects(file, kind, page - 1) or "")}">'
                         "« previous</a>")
        parts.append(f" · page {page:,} of {pages:,}")
        if page < pages:
            parts.append(f' · <a href="{attr(site.links.rejects(file, kind, page + 1) or "")}">'
                         "next »</a>")
    elif len(shown) < len(positions):
        parts.append(f"; the first {len(shown):,} are shown (run evalstream view for the rest)")
    html_page.fragment("".join(parts) + "</p>")
    ix = site.index
    body = []
    for i in shown.tolist():
        role, rej = site.source.reject(i)
        raw_href = site.links.raw(role, rej.offset)
        raw = f'<td class="excerpt">{excerpt(rej.raw, 300)}'
        raw += f' <a href="{attr(raw_href)}">whole line</a></td>' if raw_href else "</td>"
        body.append(
            f"<tr><td>{escape(role)}</td><td><bdi>{inline(ix.files[role].path)}</bdi></td>"
            f'<td class="num">{rej.line:,}</td><td class="num">{rej.offset:,}</td>'
            f"<td><bdi>{inline(rej.id) if rej.id is not None else '-'}</bdi></td>"
            f"<td><bdi>{inline(rej.path) if rej.path is not None else '-'}</bdi></td>"
            f"<td>{inline(rej.error)}</td>{raw}</tr>")
    html_page.fragment(
        '<div class="scroll"><table class="list"><thead><tr><th>file</th><th>path</th>'
        '<th class="num">line</th><th class="num">offset</th><th>id</th><th>field</th>'
        "<th>problem</th><th>line's text</th></tr></thead><tbody>" + "".join(body)
        + "</tbody></table></div>")
    return html_page.html()


def _reject_filters(site: Site, file: str | None, kind: str | None) -> str:
    rejects = site.lists.rejects
    if site.links.forms:
        fields = []
        for dim, chosen in (("file", file), ("kind", kind)):
            options, _ = _options(rejects.counts(dim), chosen)
            fields.append(f'<label>{dim}<select name="{dim}">{options}</select></label>')
        action = site.links.rejects() or ""
        return (f'<form class="filters" method="get" action="{attr(action)}">' + "".join(fields)
                + f'<button type="submit">filter</button><a href="{attr(action)}">clear</a>'
                "</form>")
    rows = []
    for dim, chosen in (("file", file), ("kind", kind)):
        parts = [_filter_link(site.links.rejects(), "all", chosen is None)]
        for value, n in rejects.counts(dim):
            href = site.links.rejects(**{dim: value})  # type: ignore[arg-type]
            parts.append(_filter_link(href, value, value == chosen, n))
        rows.append(f"<p><b>{dim}</b>: " + " · ".join(parts) + "</p>")
    return '<div class="filters">' + "".join(rows) + "</div>"


# -- errors ----------------------------------------------------------------------------------------
def message_page(site: Site | None, title: str, message: str) -> str:
    """A page that only says something (not found, a file changed)."""
    page = (new_page(site, title, None, "") if site is not None else
            Page(title, css=CSS, strict=True))
    page.paragraph(message)
    if site is not None:
        page.fragment(f'<p><a href="{attr(site.links.home())}">Back to the overview</a></p>')
    return page.html()
