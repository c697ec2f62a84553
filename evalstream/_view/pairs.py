"""Pairwise verdicts in ``evalstream view`` (issue 28): the list of inconsistent pairs, and
a pair's page (both responses side by side, both orders' answers).

The index keeps one code a verdict (``pair_code``): not pairwise, the two orders agreed, or
how they disagreed (each named the response shown first, each the one shown second, or one
said tie), or an order unscored. The list holds the inconsistent pairs by that kind, in
verdict-file order. On a pair's check page, run A's case is the cases file's (``--cases``),
run B's the one of the same id in ``--compare-cases`` (indexed like the cases: its id index,
line and offset, 40-70 bytes a case), and the judge state is rebuilt from both when no
``--states`` holds it.
"""

from __future__ import annotations

from html import escape
from typing import Any

from evalstream._verdicts.pairwise import in_runs
from evalstream._view.text import FOLD, inline, json_text, text

NOT_PAIRWISE, CONSISTENT, FIRST, SECOND, ONE_TIE, UNSCORED = range(6)
# The kinds of the list of inconsistent pairs (``lists.inconsistent``), by code FIRST,
# SECOND, ONE_TIE.
KINDS = ["response_1 both times", "response_2 both times", "a tie in one order"]


def pair_code(pair: Any) -> int:
    """The index's code of a verdict's ``pair`` (None: not a pairwise verdict)."""
    if pair is None:
        return NOT_PAIRWISE
    if pair.agreed is None:
        return UNSCORED
    if pair.agreed:
        return CONSISTENT
    answers = {o.order: o.better for o in pair.orders}
    if "tie" in answers.values():
        return ONE_TIE
    return FIRST if answers.get("ab") == "response_1" else SECOND


def has_pairs(index: Any) -> bool:
    """Whether the run holds a pairwise verdict (then the list is shown)."""
    return index.run.pair is not None and bool((index.run.pair != NOT_PAIRWISE).any())


# -- a pair's page ---------------------------------------------------------------------------------
_SIDE = {"ab": "run A's response first", "ba": "run B's response first"}


def responses_html(a: Any, b: Any, path_b: str | None, cut: int | None) -> str:
    """Run A's and run B's responses side by side (B's from ``--compare-cases``)."""
    if b is None:
        missing = ("give run B's cases with --compare-cases FILE" if path_b is None
                   else f"no case of this id in <bdi>{inline(path_b)}</bdi>")
        right = f'<p class="muted">Run B\'s response is not shown: {missing}.</p>'
    else:
        right = f'<div class="text">{json_text(b.output, FOLD, cut)}</div>'
    left = f'<div class="text">{json_text(a.output, FOLD, cut)}</div>' if a is not None else \
        '<p class="muted">Run A\'s case is not in the cases file.</p>'
    return ('<div class="field"><h3>The two responses <span class="tag shown">shown to the '
            'judge as response_1 and response_2, in both orders</span></h3>'
            '<div class="check"><div><h3>Run A</h3>' + left + "</div><div><h3>Run B</h3>"
            + right + "</div></div></div>")


def orders_html(pair: Any) -> str:
    """Both orders' answers, in run terms, and how the pair was decided."""
    rows = []
    for o in pair.orders:
        named = "-" if o.better is None else "tie" if o.better == "tie" else \
            f"{o.better} = run {in_runs(o.order, o.better).upper()}"
        why = o.reason if o.error is None else f"unscored ({o.error.cause}): {o.error.detail}"
        rows.append(f"<tr><td>{escape(_SIDE.get(o.order, o.order))}</td>"
                    f"<td>{escape(named)}</td><td><div class=\"text\">{text(why or '')}</div>"
                    "</td></tr>")
    if pair.agreed is None:
        decided = "unscored: an order has no usable answer"
    elif pair.agreed:
        decided = f"run {pair.decision.upper()}" if pair.decision != "tie" else "a tie"
        decided += " (the two orders agree)"
    else:
        decided = "a tie: the two orders disagree (the judge changed its mind with the order)"
    a, b = pair.chars
    return (f'<p><b>Decision:</b> <span class="{"ok" if pair.agreed else "bad"}">'
            f"{escape(decided)}</span>. Responses: run A {a:,} characters, run B {b:,}.</p>"
            '<table><thead><tr><th>order</th><th>named</th><th>reason</th></tr></thead>'
            "<tbody>" + "".join(rows) + "</tbody></table>")
