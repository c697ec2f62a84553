"""The summary a judge run prints on stderr (statuses, causes, requests, usage, cost,
latency), and what a dry run would send."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from evalstream._judge.report import JudgeReport

if TYPE_CHECKING:
    from evalstream._judge.dryrun import DryRun
    from evalstream._judge.expected import Expected


def verdicts_line(verdicts: int, by_status: dict[str, int], by_cause: dict[str, int]) -> str:
    """The verdicts written, by status, and the unscored ones' causes: judge's and batch
    collect's summaries say them in the same words."""
    s = by_status
    causes = f" ({', '.join(f'{k}: {v:,}' for k, v in by_cause.items())})" if by_cause else ""
    return (f"verdicts: {verdicts:,} = {s['pass']:,} pass + {s['fail']:,} fail + {s['na']:,} na "
            f"+ {s['unscored']:,} unscored{causes}")


def lines(report: JudgeReport) -> list[str]:
    """The summary as plain sentences (the table's content, for logs and tests)."""
    c, r = report.counts, report.requests
    s = report.by_status
    out = [f"judge: {c.lines:,} lines = {c.judge_states:,} judge states + {c.exact_verdicts:,} "
           f"exact verdicts (passed through) + {c.rejected:,} rejected + {c.blank:,} blank",
           verdicts_line(c.verdicts, report.by_status, report.by_cause)]
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
                  if r.lowest_concurrency < r.max_in_flight else "")
               + (f"; held {r.paced_seconds:,.1f} s by the server's rate-limit headers"
                  if r.paced_seconds else ""))
    cost = "" if report.cost_usd is None else f"; cost ${report.cost_usd:,.4f}"
    lat = report.latency_ms
    latency = "" if lat.p50 is None else (f"; latency p50 {lat.p50:,.0f} ms, p95 "
                                          f"{lat.p95:,.0f} ms")
    reasoning = report.usage.reasoning_tokens
    out.append(f"tokens this run: {report.usage.input_tokens:,} in, "
               f"{report.usage.output_tokens:,} out"
               + (f" ({reasoning:,} of them reasoning)" if reasoning else "")
               + f"{cost}{latency}")
    if report.without_structured_output:
        out.append(f"answers without structured output (read from text: a fence, reasoning "
                   f"before the JSON, text instead of the tool call): "
                   f"{report.without_structured_output:,}")
    if report.jury is not None:
        out += jury_lines(report)
    if report.confidence is not None:  # --confidence (issue 29)
        sure = report.confidence
        read = ", ".join(f"{n:,} {how}" for how, n in sure.by_reading.items() if n)
        out.append(f"confidence ({sure.source or 'none'}): {sure.verdicts:,} verdicts carry one"
                   + (f"; log probabilities read: {read}" if read else "")
                   + (f"; {sure.note}" if sure.note else ""))
    rate = unscored_line(s["unscored"], sum(s.values()), report.max_unscored_rate)
    if rate:
        out.append(rate)
    return out


def unscored_line(unscored: int, judged: int, limit: float | None) -> str | None:
    """The unscored rate against its limit (judge, batch collect), or None when no verdict is
    unscored; a run with no usable verdict says so whatever the limit. A panel's verdicts
    count, one a state (not its votes)."""
    from evalstream._judge.report import too_unscored

    if not unscored:
        return None
    if unscored == judged:
        return (f"every verdict is unscored ({unscored:,} of {judged:,}): no usable verdict "
                "(exit 1)")
    if limit is None:
        return f"unscored rate {unscored / judged:.1%} (no --max-unscored-rate)"
    over = too_unscored(unscored, judged, limit)
    return (f"unscored rate {unscored / judged:.1%}, {'above' if over else 'within'} "
            f"--max-unscored-rate {limit:g}" + (" (exit 1)" if over else ""))


def jury_lines(report: JudgeReport) -> list[str]:
    """A panel's lines: its rule, each juror's requests, votes, tokens and cost, how its votes
    agreed (issue 26)."""
    jury = report.jury
    assert jury is not None
    where = f" ({jury.file})" if jury.file else ""
    consistency = "-" if jury.consistency is None else f"{jury.consistency:.1%}"
    out = [f"panel{where}: rule {jury.rule}, {jury.votes_per_state:,} votes a state; "
           f"{jury.split:,} verdicts split, {jury.unstable:,} with a juror's samples differing; "
           f"votes agreeing with the decision: {consistency}"]
    for j in jury.jurors:
        v = j.votes
        cost = "" if j.cost_usd is None else f", ${j.cost_usd:,.4f}"
        out.append(f"  {j.name} ({j.model}, {j.samples} sample{'s' if j.samples != 1 else ''}): "
                   f"{j.sent:,} requests sent, {j.votes_stored:,} votes stored, "
                   f"{j.votes_failed:,} without an answer, {j.votes_reused:,} reused; votes "
                   f"{v['pass']:,} pass, {v['fail']:,} fail, {v['na']:,} na, "
                   f"{v['unscored']:,} unscored; tokens {j.usage.input_tokens:,} in, "
                   f"{j.usage.output_tokens:,} out{cost}")
    e = jury.escalation
    if e is not None:  # rule escalate (issue 29)
        priced = "" if e.second_cost_usd is None else (
            f"; the second judge's votes cost ${e.second_cost_usd:,.4f}"
            + ("" if e.all_second_cost_usd is None else
               f", against ${e.all_second_cost_usd:,.4f} had it been asked every state"))
        out.append(f"  escalated {e.escalated:,} of {e.states:,} states to the second judge "
                   f"(the first below {e.threshold:g}, split or unscored){priced}")
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


def expected_lines(d: DryRun, e: Expected | None = None, model: str = "") -> list[str]:
    """What the answers already stored say the output will be: per rubric, and in all (``e``:
    one juror's, of its ``model``; a panel's own ``expected`` has no rubric rows: its jurors'
    are shown under each)."""
    e = d.expected if e is None else e
    model = model or d.model
    sending = [r for r in e.by_rubric if r.requests]
    if not sending:
        return []
    if e.output_tokens_p50 is None or e.output_tokens_p95 is None:
        if all(r.source == "none" for r in sending):
            return [f"  expected output tokens: unknown: the store holds no answer of "
                    f"{model} yet, so only the bound is known."]
    out = []
    if e.output_tokens_p50 is not None and e.output_tokens_p95 is not None:
        out.append(f"  expected output tokens: {e.output_tokens_p50:,} (p50) to "
                   f"{e.output_tokens_p95:,} (p95), from the answers already stored:")
    else:
        out.append("  expected output tokens: unknown for a rubric with no answer stored:")
    for r in sending:
        if r.source == "none":
            out.append(f"    {r.rubric}: {r.requests:,} requests; no answer to go by")
            continue
        came = ("of this rubric" if r.source == "rubric" else
                f"of {model} to other rubrics (none of this one yet)")
        out.append(f"    {r.rubric}: {r.requests:,} requests x {r.p50:,} (p50) to {r.p95:,} "
                   f"(p95) output tokens, from {r.answers:,} stored answers {came}")
    return out


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
    thinking = "; the judge reasons first, and its reasoning is output within that bound" \
        if d.reasoning else ""
    out.append(f"  output tokens: at most {d.output_tokens_bound:,} ({d.max_output_tokens:,} "
               f"each, --max-output-tokens{thinking}).")
    out += expected_lines(d)
    expected = (f"; expected ${d.cost_p50_usd:,.4f} (p50) to ${d.cost_p95_usd:,.4f} (p95)."
                if d.cost_p50_usd is not None and d.cost_p95_usd is not None
                else "; no expected cost: too few answers stored.")
    if d.jurors is not None and d.prices is None:  # a jury: each juror's prices
        out.append("  cost: " + ("give every juror `price_in` and `price_out` to see it."
                                 if d.cost_bound_usd is None else
                                 f"at most ${d.cost_bound_usd:,.4f} (each juror's prices; "
                                 "output at its bound)" + expected))
    elif d.prices is None or d.cost_bound_usd is None:
        out.append("  cost: give --price-in and --price-out (USD per million tokens) to see it.")
    else:
        out.append(f"  cost: at most ${d.cost_bound_usd:,.4f} (${d.prices.input:g} in, "
                   f"${d.prices.output:g} out per million tokens; output at its bound)"
                   + expected)
    for j in d.jurors or ():
        cost = "" if j.cost_bound_usd is None else f", cost at most ${j.cost_bound_usd:,.4f}"
        if j.cost_p50_usd is not None and j.cost_p95_usd is not None:
            cost += f", expected ${j.cost_p50_usd:,.4f} (p50) to ${j.cost_p95_usd:,.4f} (p95)"
        approx = "" if j.tokens_exact else "about "
        out.append(f"  juror {j.name} ({j.model}, {j.samples} sample"
                   f"{'s' if j.samples != 1 else ''} a state): {j.to_send:,} requests for "
                   f"{j.votes_to_send:,} votes ({j.stored:,} stored), input tokens "
                   f"{approx}{j.input_tokens:,}, output at most {j.output_tokens_bound:,}{cost}.")
        out += ["  " + line for line in expected_lines(d, j.expected, j.model)]
    out.append("No request was sent.")
    return "\n".join(out) + "\n"
