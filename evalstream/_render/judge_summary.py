"""The summary a judge run prints on stderr (statuses, causes, requests, usage, cost,
latency), and what a dry run would send."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from evalstream._judge.report import JudgeReport

if TYPE_CHECKING:
    from evalstream._judge.dryrun import DryRun


def lines(report: JudgeReport) -> list[str]:
    """The summary as plain sentences (the table's content, for logs and tests)."""
    c, r = report.counts, report.requests
    s = report.by_status
    out = [f"judge: {c.lines:,} lines = {c.judge_states:,} judge states + {c.exact_verdicts:,} "
           f"exact verdicts (passed through) + {c.rejected:,} rejected + {c.blank:,} blank",
           f"verdicts: {c.verdicts:,} = {s['pass']:,} pass + {s['fail']:,} fail + {s['na']:,} na "
           f"+ {s['unscored']:,} unscored"
           + (f" ({', '.join(f'{k}: {v:,}' for k, v in report.by_cause.items())})"
              if report.by_cause else "")]
    if c.pairs:  # issue 28
        out.append(f"pairs: {c.pairs:,} pairwise verdicts from {2 * c.pairs:,} judge states (both "
                   "orders of each pair); a pair is pass when run A's response is the better, "
                   "fail when run B's, na a tie (also when its orders disagree)")
    if c.not_judged:
        out.append(f"not judged: {c.not_judged:,} (stopped by --{report.stopped_by}; run the "
                   "same command again to continue)" if report.stopped_by else
                   f"not judged: {c.not_judged:,}")
    retried = ", ".join(f"{k}: {v:,}" for k, v in r.retried.items())
    out.append(f"requests: {r.sent:,} sent ({r.answered:,} answered, {r.failed:,} without an "
               f"answer), {r.reused:,} answers reused from {report.store}"
               + (f" ({r.from_other_runs:,} more sent by another run on it)"
                  if r.from_other_runs else "") + f"; {r.retries:,} retries"
               + (f" ({retried})" if retried else "") + f"; at most {r.max_in_flight:,} in flight"
               + (f", concurrency lowered to {r.lowest_concurrency:,} by 429s"
                  if r.lowest_concurrency < r.max_in_flight else ""))
    cost = "" if report.cost_usd is None else f"; cost ${report.cost_usd:,.4f}"
    lat = report.latency_ms
    latency = "" if lat.p50 is None else (f"; latency p50 {lat.p50:,.0f} ms, p95 "
                                          f"{lat.p95:,.0f} ms")
    out.append(f"tokens this run: {report.usage.input_tokens:,} in, "
               f"{report.usage.output_tokens:,} out{cost}{latency}")
    if report.max_unscored_rate is not None and report.unscored_rate is not None:
        verb = "above" if report.unscored_rate > report.max_unscored_rate else "within"
        out.append(f"unscored rate {report.unscored_rate:.1%}, {verb} --max-unscored-rate "
                   f"{report.max_unscored_rate:g}")
    return out


def render(report: JudgeReport, file: TextIO) -> None:
    """The summary, then a table of statuses and causes (rich; plain text off a terminal)."""
    from rich.table import Table

    from evalstream._render.console import terminal
    from evalstream._render.tables import literal

    console = terminal(file, highlight=False)
    for line in lines(report):
        console.print(literal(line), soft_wrap=True)
    if report.by_cause:
        table = Table(show_edge=False, pad_edge=False)
        table.add_column("unscored because")
        table.add_column("verdicts", justify="right")
        for cause, n in report.by_cause.items():
            table.add_row(literal(cause), f"{n:,}")
        console.print(table)
    if report.counts.rejected:
        console.print(literal(f"rejects written to {report.rejects}"), soft_wrap=True)
    for warning in report.warnings:
        console.print(literal(f"warning: {warning}"), soft_wrap=True)


def dry_run_text(d: DryRun) -> str:
    """The dry run for a person."""
    out = [f"judge --dry-run: {d.input}: {d.lines:,} lines = {d.judge_states:,} judge states + "
           f"{d.exact_verdicts:,} exact verdicts + {d.rejected:,} rejected + {d.blank:,} blank.",
           f"  requests to send: {d.to_send:,}; answers already stored: {d.stored:,} (in "
           f"{d.store}); duplicates of another state's request: {d.duplicates:,}."]
    if d.max_requests is not None and d.to_send > d.max_requests:
        out.append(f"  --max-requests {d.max_requests:,} stops the run before the other "
                   f"{d.to_send - d.max_requests:,} (the figures below are for all).")
    approx = "" if d.tokens_exact else "about "
    out.append(f"  input tokens: {approx}{d.input_tokens:,} ({d.tokens_note}).")
    out.append(f"  output tokens: at most {d.output_tokens_bound:,} ({d.max_output_tokens:,} "
               "each, --max-output-tokens).")
    if d.prices is None or d.cost_bound_usd is None:
        out.append("  cost: give --price-in and --price-out (USD per million tokens) to see it.")
    else:
        out.append(f"  cost: at most ${d.cost_bound_usd:,.4f} (${d.prices.input:g} in, "
                   f"${d.prices.output:g} out per million tokens; output at its bound).")
    out.append("No request was sent.")
    return "\n".join(out) + "\n"
