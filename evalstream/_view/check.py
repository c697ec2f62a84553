"""The check page: one case as a person reads it, beside exactly what its rubric's judge was
shown, what was withheld, what the judge answered and why, the label, and the other run.

The judge state is the one build wrote (``--states``), else the one build makes for this
case with the rubric set (the ``Checker``): its xxh3-128 is compared with the verdict's
``state_hash``, so the page says whether this is the state the judge answered. A pairwise
verdict's page also shows run B's response beside run A's and both orders' answers
(``view.pairs``).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

import msgspec
import xxhash

from evalstream._cases.schema import Case
from evalstream._checks.state import FIELD_OF, PAIR_PREAMBLE, PREAMBLE
from evalstream._verdicts.records import STATUSES
from evalstream._view import pairs
from evalstream._view.index import (
    COMPARE,
    LABEL_STATUSES,
    NOT_JUDGED,
    SOURCES,
    VERDICTS,
    key_of,
    split_key,
)
from evalstream._view.pages import Site, badge, new_page
from evalstream._view.records import StateRecord
from evalstream._view.text import FOLD, attr, inline, json_text, text
from evalstream._view.votes import confidence_html, votes_html

MAX_SIBLINGS = 100  # links to the case's other checks
BIG_RECORD = 4 << 20  # a case line over this is shown with each text cut at CUT characters
CUT = 20_000
CHECK_CSS = """
.check { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 8px 28px; }
@media (max-width: 960px) { .check { grid-template-columns: minmax(0, 1fr); } }
.check h2 { margin-top: 18px; }
.field { margin: 10px 0 16px; }
.field h3 { margin: 0 0 4px; display: flex; flex-wrap: wrap; gap: 6px; align-items: baseline; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; unicode-bidi: plaintext;
        font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
        background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px;
        padding: 7px 10px; margin: 2px 0 8px; max-height: 36em; overflow: auto; }
.text details.more summary { cursor: pointer; color: #0969da; font-family: system-ui, sans-serif; }
.item { border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; margin: 6px 0; }
.item .head { font-size: 12.5px; color: var(--muted); display: flex; flex-wrap: wrap; gap: 8px; }
.tag { font-size: 11.5px; font-weight: 600; padding: 0 6px; border-radius: 4px; }
.tag.shown { background: #ddf4ff; color: #0550ae; }
.tag.withheld { background: #eaeef2; color: #424a53; }
.tag.never { background: #fbefff; color: #6e40c9; }
.siblings { display: flex; flex-wrap: wrap; gap: 6px 14px; margin: 10px 0 4px; font-size: 13px; }
.siblings .here { font-weight: 700; }
dl.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 3px 14px;
           margin: 6px 0 10px; font-size: 13px; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.verdict-status .badge { font-size: 15px; padding: 2px 12px; }
.ok { color: #116329; } .bad { color: #a40e26; }
p.cut { color: #a40e26; font-family: system-ui, sans-serif; margin: 6px 0 0; }
"""
# The sections of a case, in reading order: (case attribute, judge-state name, heading).
SECTIONS = (
    ("input", "user_input", "Input (user)"),
    ("output", "assistant_response", "Output (assistant)"),
    ("messages", "conversation", "Conversation"),
    ("tool_events", "tool_events", "Tool events"),
    ("context", "reference_material", "Reference material"),
    ("policy", "policy", "Policy"),
)
assert {s[1] for s in SECTIONS} == set(FIELD_OF)


@dataclass
class Exposure:
    """What the judge was shown, as recorded (verdict or state record) or as rebuilt."""

    shown: list[str]
    withheld: list[str]
    never_shown: list[str]
    tokens: dict[str, Any] | None
    source: str


def check_page(site: Site, case_id: str, rubric_id: str) -> str | None:
    """The page of (case id, rubric id), or None when no file has anything for it."""
    ix = site.index
    row = ix.row_of(case_id)
    rubric = ix.rubric_names.of.get(rubric_id)
    if row is None or rubric is None:
        return None
    key = key_of(row, rubric)
    if key not in set(ix.keys_of_row(row).tolist()) and not (
            row < ix.n_cases and rubric < len(ix.rubrics.rubrics)):
        return None
    return _Check(site, key, case_id, rubric_id).html()


class _Check:
    def __init__(self, site: Site, key: int, case_id: str, rubric_id: str) -> None:
        import numpy as np

        self.site, self.key, self.case_id, self.rubric_id = site, key, case_id, rubric_id
        ix, src = site.index, site.source
        self.row, self.rubric = split_key(key)
        keys = np.array([key], dtype=np.uint64)
        self.case: Case | None = None
        self.case_line = self.case_size = 0
        if self.row < ix.n_cases:
            self.case_line, self.case, self.case_size = src.case(self.row)
        self.verdict = self.raw = None
        self.verdict_line: int | None = None
        at = int(ix.run.find(keys)[0])
        if at >= 0:
            self.verdict, self.raw = src.verdict(ix.run, at, VERDICTS)
            self.verdict_line = int(ix.run.line[at])
        self.other = self.other_raw = None
        self.other_line: int | None = None
        self.comparable: list[str] = []
        if ix.other is not None:
            bt = int(ix.other.find(keys)[0])
            if bt >= 0:
                self.other, self.other_raw = src.verdict(ix.other, bt, COMPARE)
                self.other_line = int(ix.other.line[bt])
                if at >= 0:
                    assert ix.run.hashes is not None and ix.other.hashes is not None
                    self.comparable = [name for name, a, b in zip(
                        ("rubric_hash", "state_hash", "exposure"), ix.run.hashes[at],
                        ix.other.hashes[bt], strict=True) if a != b]
        lt = int(ix.label_of(keys)[0])
        self.label = None if lt < 0 else (LABEL_STATUSES[ix.label_status[lt]],
                                          SOURCES[ix.label_source[lt]])
        self.skip = ix.skip_of(key)
        self.record: StateRecord | None = None
        pt = int(np.searchsorted(ix.state_key, keys)[0])
        if pt < len(ix.state_key) and int(ix.state_key[pt]) == key:
            self.record = src.state(pt)
        elif self.skip is not None and self.skip.state is not None:
            self.record = src.pending_state(*self.skip.state)
        self.rebuilt = self.rebuilt_exposure = None
        self.pair = getattr(self.verdict, "pair", None)
        self.paired = None  # run B's case, for a pairwise verdict
        if self.pair is not None:
            self.paired = src.paired_case(case_id)
        if self.case is not None and self.rubric < len(ix.rubrics.rubrics):
            if ix.rubrics.rubrics[self.rubric].pairwise:
                if self.paired is not None:
                    self.rebuilt, self.rebuilt_exposure = src.rebuilt_pair(
                        self.case, self.paired, self.case_line, self.rubric)
            else:
                self.rebuilt, self.rebuilt_exposure = src.rebuilt(self.case, self.case_line,
                                                                  self.rubric)
        self.cut = CUT if self.case_size > BIG_RECORD else None

    # -- the page --------------------------------------------------------------------------
    def html(self) -> str:
        ix = self.site.index
        where = [f"case line {self.case_line:,} of {ix.options.cases}" if self.case
                 else f"case not in {ix.options.cases}"]
        if self.verdict_line is not None:
            where.append(f"verdict line {self.verdict_line:,} of {ix.options.verdicts}")
        page = new_page(self.site, f"{self.case_id} · {self.rubric_id}", "; ".join(where), "",
                        CHECK_CSS)
        page.fragment(self._siblings())
        exposure = self._exposure()
        page.fragment('<div class="check"><section>' + self._case_html(exposure)
                      + "</section><section>" + self._judge_html(exposure)
                      + "</section></div>")
        return page.html()

    def _siblings(self) -> str:
        """Links to the case's other checks, each with its verdict and label."""
        import numpy as np

        ix = self.site.index
        keys = ix.keys_of_row(self.row)
        if self.row < ix.n_cases:  # every rubric of the set has a check or a skip reason
            keys = np.union1d(keys, [key_of(self.row, r) for r in range(len(ix.rubrics.rubrics))])
        keys = keys.astype(np.uint64)
        more = len(keys) - MAX_SIBLINGS
        if more > 0:  # this check, then the first others (a file may name any number)
            keys = np.union1d([self.key], keys[:MAX_SIBLINGS - 1]).astype(np.uint64)
        at = ix.run.find(keys)
        lt = ix.label_of(keys)
        parts = []
        for i, key in enumerate(keys.tolist()):
            rubric_id = ix.rubric_names.names[split_key(key)[1]]
            if len(rubric_id) > 80:
                rubric_id_shown = rubric_id[:79] + "…"
            else:
                rubric_id_shown = rubric_id
            status = STATUSES[ix.run.status[at[i]]] if at[i] >= 0 else None
            label = LABEL_STATUSES[ix.label_status[lt[i]]] if lt[i] >= 0 else None
            name = f"<bdi>{inline(rubric_id_shown)}</bdi>"
            href = self.site.links.check(self.case_id, rubric_id)
            if key == self.key:
                name = f'<span class="here">{name}</span>'
            elif href:
                name = f'<a href="{attr(href)}">{name}</a>'
            skip = ix.skip_of(key)
            why = skip.reason if skip is not None else "no verdict"
            verdict = badge(status) if status else f'<span class="muted">{inline(why)}</span>'
            labelled = f' <span class="muted">label</span> {badge(label)}' if label else ""
            parts.append(f"<span>{name} {verdict}{labelled}</span>")
        if more > 0:
            parts.append(f'<span class="muted">and {more:,} more</span>')
        return ('<div class="siblings"><span class="muted">checks of this case:</span>'
                + "".join(parts) + "</div>")

    def _exposure(self) -> Exposure | None:
        for source, holder in (("the verdict", self.raw), ("the states file", self.record.raw
                                                            if self.record else None)):
            exp = holder.get("exposure") if isinstance(holder, dict) else None
            if isinstance(exp, dict) and isinstance(exp.get("shown"), list):
                return Exposure(_names(exp.get("shown")), _names(exp.get("withheld")),
                                _names(exp.get("never_shown")),
                                exp.get("tokens") if isinstance(exp.get("tokens"), dict)
                                else None, source)
        if self.rebuilt_exposure is not None:
            e = self.rebuilt_exposure
            tokens = None if e.tokens is None else msgspec.to_builtins(e.tokens)
            return Exposure(list(e.shown), list(e.withheld), list(e.never_shown), tokens,
                            "build's rules for this case (not recorded in any file)")
        return None

    # -- the case --------------------------------------------------------------------------
    def _case_html(self, exposure: Exposure | None) -> str:
        case = self.case
        ix = self.site.index
        if case is None:
            return ("<h2>The case</h2><p>This case id is not a case of "
                    f"<bdi>{inline(ix.options.cases)}</bdi> (absent, or its line was "
                    "rejected: see the rejected lines).</p>")
        out = ["<h2>The case</h2>"]
        if self.pair is not None:
            out.append(pairs.responses_html(case, self.paired, ix.options.compare_cases,
                                            self.cut))
        if self.cut is not None:
            href = self.site.links.raw("cases", int(ix.case_offset[self.row]))
            whole = f' <a href="{attr(href)}">The whole line.</a>' if href else ""
            out.append(f'<p class="warn">This case is {self.case_size:,} bytes: each text is cut '
                       f"at {CUT:,} characters here (line {self.case_line:,} of "
                       f"<bdi>{inline(ix.options.cases)}</bdi> holds it whole).{whole}</p>")
        for attr_name, name, heading in SECTIONS:
            value = getattr(case, attr_name)
            if value is None:
                continue
            out.append(f'<div class="field"><h3>{escape(heading)} {_tag(name, exposure)}</h3>'
                       + self._value(attr_name, value) + "</div>")
        if case.metadata is not None:
            out.append('<div class="field"><h3>Metadata <span class="tag never">never shown'
                       "</span></h3>" + self._block(case.metadata) + "</div>")
        if case.expected is not None:
            rows = "".join(
                f"<tr><td><bdi>{inline(rid)}</bdi></td><td>{badge(label.status)}</td>"
                f"<td>{escape(label.source)}</td></tr>" for rid, label in case.expected.items())
            out.append('<div class="field"><h3>Expected labels <span class="tag never">never '
                       'shown</span></h3><table><thead><tr><th>rubric</th><th>status</th>'
                       f"<th>source</th></tr></thead><tbody>{rows}</tbody></table></div>")
        return "".join(out)

    def _block(self, value: Any) -> str:
        return f'<div class="text">{json_text(value, FOLD, self.cut)}</div>'

    def _value(self, attr_name: str, value: Any) -> str:
        if attr_name in ("input", "output", "policy"):
            return self._block(value)
        if attr_name == "messages":
            if not value:
                return '<p class="muted">(an empty conversation)</p>'
            return "".join(
                f'<div class="item"><div class="head"><b>{inline(m.role)}</b>'
                f"<span>id <bdi>{inline(m.id)}</bdi></span></div>{self._block(m.content)}</div>"
                for m in value)
        if attr_name == "context":
            if not value:
                return '<p class="muted">(no passage)</p>'
            return "".join(
                f'<div class="item"><div class="head"><span>passage <bdi>{inline(p.id)}</bdi>'
                f"</span></div>{self._block(p.text)}</div>" for p in value)
        if not value:
            return '<p class="muted">(no tool was called)</p>'
        events = []
        for e in value:
            status = "pass" if e.status == "success" else "fail"
            parts = [f'<div class="item"><div class="head"><b><bdi>{inline(e.name)}</bdi></b>'
                     f'<span class="badge s-{status}">{escape(e.status)}</span>'
                     f"<span>id <bdi>{inline(e.id)}</bdi></span></div>"]
            for label, field_value in (("error", e.error), ("input", e.input),
                                       ("output", e.output)):
                if field_value is not None:
                    parts.append(f'<div class="muted">{label}</div>{self._block(field_value)}')
            events.append("".join(parts) + "</div>")
        return "".join(events)

    # -- the judge -------------------------------------------------------------------------
    def _judge_html(self, exposure: Exposure | None) -> str:
        out = ["<h2>The verdict</h2>", self._verdict_html()]
        if self.pair is not None:
            out.append("<h2>The two orders</h2>" + pairs.orders_html(self.pair))
        if self.label is not None or self.case is not None:
            out.append("<h2>The label</h2>" + self._label_html())
        if self.site.index.other is not None:
            out.append("<h2>The other run</h2>" + self._other_html())
        if self.skip is not None:
            out.append("<h2>Why there is no verdict</h2>" + self._skip_html())
        out.append("<h2>What the judge was shown</h2>" + self._exposure_html(exposure))
        out.append(self._state_html())
        return "".join(out)

    def _verdict_html(self) -> str:
        v, raw = self.verdict, self.raw
        if v is None or raw is None:
            return '<p class="muted">No verdict for this check in this run.</p>'
        facts = [("status", f'<span class="verdict-status">{badge(v.status)}</span>')]
        if v.rationale is not None:
            facts.append(("rationale", f'<div class="text">{text(v.rationale)}</div>'))
        if v.error is not None:
            facts.append(("cause", f"<b>{inline(v.error.cause)}</b>"))
            facts.append(("detail", f'<div class="text">{text(v.error.detail)}</div>'))
        judge = raw.get("judge")
        if isinstance(judge, dict):
            facts.append(("judge", "; ".join(
                f"{inline(str(k))}: <bdi>{inline(_shown(value))}</bdi>"
                for k, value in judge.items())))
        if v.confidence is not None:  # judge --confidence (issue 29)
            facts.append(("confidence", confidence_html(v.confidence)))
        if v.usage is not None:
            facts.append(("usage", f"{v.usage.input_tokens:,} input tokens, "
                                   f"{v.usage.output_tokens:,} output tokens"))
        if v.request_id is not None:
            facts.append(("request id", f"<bdi>{inline(v.request_id)}</bdi>"))
        if v.kind == "exact":
            evidence = ", ".join(inline(e) for e in v.evidence or []) or "-"
            facts.append(("exact rubric", f"evaluated by evalstream from the tool events; "
                                          f"evidence: {evidence}"))
        for name in ("rubric_hash", "state_hash"):
            value = getattr(v, name)
            if value is not None:
                facts.append((name.replace("_", " "), f"<code>{inline(value)}</code>"))
        facts.append(("line", f"{self.verdict_line:,} of <bdi>"
                              f"{inline(self.site.index.options.verdicts)}</bdi>"))
        return _facts(facts) + votes_html(v)  # a panel's votes, each with its rationale

    def _label_html(self) -> str:
        if self.label is None:
            return '<p class="muted">The case has no label for this rubric.</p>'
        status, source = self.label
        facts = [("label", f"{badge(status)} ({escape(source)})")]
        v = self.verdict
        if v is not None and status in ("pass", "fail") and v.status in ("pass", "fail"):
            if v.status == status:
                facts.append(("judge", '<span class="ok">agrees with the label</span>'))
            else:
                what = ("missed: the label fails it, the judge passed it" if status == "fail"
                        else "false alarm: the label passes it, the judge failed it")
                facts.append(("judge", f'<span class="bad">{what}</span>'))
        elif v is not None:
            facts.append(("judge", "left out of the agreement statistics (a label or verdict "
                                   "that is not pass or fail)"))
        return _facts(facts)

    def _other_html(self) -> str:
        o = self.other
        path = self.site.index.options.compare or ""
        if o is None:
            return f'<p class="muted">No verdict for this check in <bdi>{inline(path)}</bdi>.</p>'
        facts = [("status", badge(o.status))]
        if self.verdict is not None and self.verdict.status != o.status:
            facts.append(("change", f"{inline(self.verdict.status)} -&gt; {inline(o.status)}"))
        if o.rationale is not None:
            facts.append(("rationale", f'<div class="text">{text(o.rationale)}</div>'))
        if o.error is not None:
            facts.append(("cause", f"{inline(o.error.cause)}: {inline(o.error.detail)}"))
        if self.verdict is not None:
            if self.comparable:
                facts.append(("comparable", '<span class="bad">no: the judge did not see the '
                              f"same thing ({escape(', '.join(self.comparable))} "
                              "differ)</span>"))
            else:
                facts.append(("comparable", '<span class="ok">yes: same rubric, state and '
                                            "exposure</span>"))
        for name in ("rubric_hash", "state_hash"):
            value = getattr(o, name)
            if value is not None:
                facts.append((name.replace("_", " "), f"<code>{inline(value)}</code>"))
        facts.append(("line", f"{self.other_line:,} of <bdi>{inline(path)}</bdi>"))
        return _facts(facts)

    def _skip_html(self) -> str:
        assert self.skip is not None
        reason, tokens, exact = self.skip.reason, self.skip.tokens, self.skip.exact
        ix = self.site.index
        facts = [("reason", f"<b>{inline(reason)}</b>")]
        if tokens:
            count = f"{tokens:,}" if exact else f"at least {tokens:,}"
            facts.append(("tokens", f"{count} (state, longest question and answer instruction, "
                                    "framing and the answer's bound) over the budget of "
                                    f"{ix.options.max_tokens:,}: build counts it and writes no "
                                    "judge state (never truncated)"))
        elif reason == NOT_JUDGED:
            facts.append(("what", "build wrote a judge state for this check, and the run has "
                                  "no verdict for it"))
        elif reason.startswith(("requires", "when")):
            facts.append(("what", "the rubric does not apply to this case, so build writes no "
                                  "check"))
        else:
            facts.append(("what", "the case has a label for this rubric but no file has a "
                                  "verdict or a judge state for it"))
        return _facts(facts)

    def _exposure_html(self, exposure: Exposure | None) -> str:
        if exposure is None:
            return '<p class="muted">No record of what a judge was shown for this check.</p>'
        facts = [("shown", _name_list(exposure.shown, "shown")),
                 ("withheld", _name_list(exposure.withheld, "withheld")),
                 ("never shown", _name_list(exposure.never_shown, "never")),
                 ("recorded in", escape(exposure.source))]
        t = exposure.tokens
        if t:
            facts.append(("tokens", escape(_tokens_line(t))))
        return _facts(facts)

    def _state_html(self) -> str:
        """The question and the state exactly as sent, and whether it is the one judged."""
        ix = self.site.index
        record, check = self.record, self.rebuilt
        rubric = ix.rubrics.rubrics[self.rubric] if self.rubric < len(ix.rubrics.rubrics) \
            else None
        if rubric is not None and rubric.kind == "exact":
            return (f"<h3>Exact rubric</h3><div class=\"text\">{text(rubric.question)}</div>"
                    "<p class=\"note\">No judge: evalstream evaluated the rubric's condition on "
                    "the tool events.</p>")
        question: str | None = None
        state: bytes | None = None
        origin = ""
        if record is not None and record.state is not None:
            question, state = record.question, record.state
            where = (f"line {record.line:,} of <bdi>{inline(ix.options.states or '')}</bdi>"
                     if record.line is not None else "the judge state left unjudged")
            origin = f"as build wrote it ({where})"
        elif check is not None and check.state is not None and rubric is not None:
            question, state = rubric.asked, check.state
            origin = "as build makes it for this case with the rubric set (no --states given)"
            if rubric.pairwise:
                origin = ("as build --pair-with makes its first order (run A's response "
                          "first) from this case and run B's (no --states given)")
        out = ["<h3>The question</h3>"]
        if question is None and rubric is not None:
            question = rubric.asked
        if question is None:
            out.append('<p class="muted">Unknown: the rubric is not in the rubric set and no '
                       "states file holds this check (give --states or --rubrics).</p>")
        else:
            preamble = next((p for p in (PREAMBLE, PAIR_PREAMBLE) if question.startswith(p)),
                            None)
            asked = question[len(preamble):].lstrip("\n") if preamble else question
            out.append(f'<div class="text">{text(asked)}</div>')
            if preamble:
                out.append('<details><summary class="muted">after the untrusted-data preamble '
                           "every question opens with</summary>"
                           f'<div class="text">{text(preamble)}</div></details>')
        out.append("<h3>The judge state, exactly as sent</h3>")
        if state is None:
            out.append('<p class="muted">No judge state: '
                       + ("the check is over the budget and none was written."
                          if self.skip and self.skip.tokens else
                          "no states file holds it and the rubric set cannot rebuild it.")
                       + "</p>")
            return "".join(out)
        digest = xxhash.xxh3_128_hexdigest(state)
        claimed = self.verdict.state_hash if self.verdict is not None else None
        if claimed is None:
            verdict_note = "the verdict records no state hash to check it against"
            cls = "muted"
        elif claimed == digest:
            verdict_note = "the verdict's state_hash: this is the state the judge answered"
            cls = "ok"
        else:
            verdict_note = (f"not the verdict's state_hash ({claimed}): the judge answered "
                            "another state (the case or the rubric set changed)")
            cls = "bad"
        out.append(f'<p class="note">{origin}; {len(state):,} bytes; xxh3-128 <code>{digest}'
                   f'</code>, <span class="{cls}">{inline(verdict_note)}</span>.</p>')
        out.append(f'<div class="text">{text(state.decode("utf-8", "replace"), FOLD * 4, self.cut)}'
                   "</div>")
        return "".join(out)


def _facts(facts: list[tuple[str, str]]) -> str:
    return ('<dl class="facts">' + "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in facts)
            + "</dl>")


def _tag(name: str, exposure: Exposure | None) -> str:
    if exposure is None:
        return ""
    if name in exposure.shown or (name == "assistant_response"
                                  and "response_1" in exposure.shown):  # a pairwise state
        return '<span class="tag shown">shown to the judge</span>'
    return '<span class="tag withheld">withheld from the judge</span>'


def _tokens_line(t: dict[str, Any]) -> str:
    """The budget figures of a record: exact counts when the state was counted, else its
    UTF-8 bytes (an upper bound); older records (state, total and ``method``) are read too."""
    tokenizer = _shown(t.get("tokenizer"))
    budget = _n(t.get("budget"))
    reserved = t.get("reserved")  # since issue 25: what the budget holds back beside the texts
    held = (f" + framing {_n(reserved.get('framing'))} + the answer's bound "
            f"{_n(reserved.get('output'))}" if isinstance(reserved, dict) else "")
    asked = "longest question and answer instruction" if held else "longest question"
    for figures, how in ((t.get("exact"), "exact token counts"),
                         (t.get("bytes"), "UTF-8 bytes, an upper bound of the tokens: not "
                                          "counted, as they fit")):
        if isinstance(figures, dict):
            return (f"state {_n(figures.get('state'))} + {asked} "
                    f"{_n(figures.get('longest_question'))} = {_n(figures.get('total'))}{held} "
                    f"of a budget of {budget} ({tokenizer}; {how})")
    method = t.get("method")
    how = ("UTF-8 bytes, an upper bound of the tokens" if method == "bytes"
           else "exact token counts" if method == "bpe" else _shown(method))
    return (f"state {_n(t.get('state'))} + longest question {_n(t.get('longest_question'))}"
            f" = {_n(t.get('total'))} of a budget of {budget} ({tokenizer}; {how})")


def _name_list(names: list[str], cls: str) -> str:
    if not names:
        return '<span class="muted">none</span>'
    return " ".join(f'<span class="tag {cls}">{inline(n)}</span>' for n in names)


def _names(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else msgspec.json.encode(value).decode()


def _n(value: Any) -> str:
    if value is None:
        return "?"
    return f"{value:,}" if isinstance(value, int) else _shown(value)

