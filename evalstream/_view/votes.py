"""A panel's votes on the check page (issue 26): one row a juror and sample, with its status,
its rationale (or why it is unscored) and its tokens, under the panel's rule and counts; and a
verdict's confidence (issue 29)."""

from __future__ import annotations

from html import escape
from typing import Any

from evalstream._view.pages import badge
from evalstream._view.text import inline, text


def votes_html(verdict: Any) -> str:
    """The votes of a panel's verdict as a table ("" for a verdict without votes)."""
    if not verdict.votes:
        return ""
    panel = verdict.panel
    said = "" if panel is None else (
        f"<p>Decided by <b>{inline(panel.rule)}</b> over {panel.scored:,} scored of "
        f"{panel.votes:,} votes; {panel.agreed:,} agree with the decision.</p>")
    rows = []
    for vote in verdict.votes:
        why = text(vote.rationale) if vote.rationale is not None else (
            f"<b>{inline(vote.error.cause)}</b>: {text(vote.error.detail)}"
            if vote.error is not None else '<span class="muted">-</span>')
        usage = "-" if vote.usage is None else (
            f"{vote.usage.input_tokens:,} in, {vote.usage.output_tokens:,} out")
        rows.append(f'<tr><td class="key"><bdi>{inline(vote.judge)}</bdi></td>'
                    f'<td class="key"><bdi>{inline(vote.model or "")}</bdi></td>'
                    f'<td class="num">{vote.sample:,}</td><td>{badge(vote.status)}</td>'
                    f'<td><div class="text">{why}</div></td>'
                    f'<td class="num">{escape(usage)}</td></tr>')
    return ('<h2>The votes</h2>' + said + '<div class="scroll"><table class="list votes">'
            "<thead><tr><th>juror</th><th>model</th><th>sample</th><th>status</th>"
            "<th>rationale</th><th>tokens</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table></div>")


def confidence_html(confidence: Any) -> str:
    """A verdict's confidence (issue 29): each status's probability, and where it came from
    (the status token's log probabilities, or a panel's share of votes)."""
    said = {"logprobs": "the status token's log probabilities",
            "samples": "the share of the panel's scored votes"}.get(confidence.source,
                                                                    confidence.source)
    shares = ", ".join(f"{badge(status)} {value:.1%}" for status, value in (
        ("pass", confidence.pass_), ("fail", confidence.fail), ("na", confidence.na)))
    return f'<span class="confidence">{shares}</span> <span class="muted">({inline(said)})</span>'
