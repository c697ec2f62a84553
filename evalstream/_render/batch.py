"""What the batch commands print: prepare's and collect's summaries, submit's and status's
table of request files. Plain sentences (the summaries go to stderr, the tables to stdout)."""

from __future__ import annotations

from evalstream._judge.batch.remote import BatchSummary
from evalstream._judge.batch.report import CollectReport, PrepareReport
from evalstream._render.judge_summary import unscored_line, verdicts_line


def prepare_lines(r: PrepareReport) -> list[str]:
    """The summary of a prepare."""
    c = r.counts
    out = [f"batch prepare: {c.lines:,} lines = {c.judge_states:,} judge states + "
           f"{c.exact_verdicts:,} exact verdicts + {c.rejected:,} rejected + {c.blank:,} blank",
           f"requests: {c.requests:,} in {len(r.files):,} file(s) for {r.format} "
           f"(at most {r.limits.requests:,} requests and {r.limits.bytes:,} bytes a file); "
           f"{c.duplicates:,} judge states share another's request; {c.stored:,} already "
           f"answered" + (f" in {r.store}" if r.store else "")]
    for f in r.files:
        out.append(f"  {r.folder.rstrip('/')}/{f.name}: {f.requests:,} requests, {f.bytes:,} "
                   "bytes")
    if c.rejected:
        out.append(f"rejects written to {r.folder.rstrip('/')}/rejects.jsonl")
    out += [f"warning: {w}" for w in r.warnings]
    return out


def collect_lines(r: CollectReport) -> list[str]:
    """The summary of a collect."""
    res, c, s = r.results, r.counts, r.by_status
    types = ", ".join(f"{n:,} {t}" for t, n in r.by_type.items())
    out = [f"batch collect: {len(r.result_files):,} result file(s), {res.lines:,} lines: "
           f"{types}; {res.blank:,} blank, {res.rejected:,} rejected"
           + (f" ({res.unknown:,} unknown custom_id, {res.conflicts:,} conflicting answers)"
              if res.rejected else ""),
           f"answers: {res.answers:,} stored now in {r.store}, {res.repeats:,} repeated an "
           "answer already stored",
           verdicts_line(c.verdicts, r.by_status, r.by_cause)
           + f"; {c.exact_verdicts:,} exact verdicts passed through"]
    if c.pairs:  # issue 28
        out.append(f"pairs: {c.pairs:,} pairwise verdicts from {2 * c.pairs:,} judge states (both "
                   "orders of each pair); pass: run A's response is the better, fail: run B's, "
                   "na: a tie")
    if c.missing:
        out.append(f"missing: {c.missing:,} judge states have no verdict (listed in the report); "
                   f"collect more results, or prepare them again with `evalstream batch prepare "
                   f"STATES NEW_DIR --only-missing {r.folder}`")
    cost = "" if r.cost_usd is None else f"; cost ${r.cost_usd:,.4f} at the given prices"
    out.append(f"tokens of the verdicts' answers: {r.usage_all.input_tokens:,} in, "
               f"{r.usage_all.output_tokens:,} out{cost}")
    rate = unscored_line(s["unscored"], sum(s.values()), r.max_unscored_rate)
    if rate:
        out.append(rate)
    if res.rejected:
        out.append(f"rejects written to {r.rejects}")
    out += [f"warning: {w}" for w in r.warnings]
    return out


def summary_lines(s: BatchSummary) -> list[str]:
    """One line a request file: its batch, status, counts and downloaded results."""
    out = []
    for e in s.files:
        counts = ", ".join(f"{k} {v:,}" for k, v in e.counts.items())
        line = f"{e.file}: {e.requests:,} requests; {e.status}"
        if e.batch_id:
            line += f" ({e.batch_id})"
        if counts:
            line += f"; {counts}"
        if e.results:
            line += f"; results: {', '.join(e.results)}"
        if e.error:
            line += f"; error: {e.error}"
        out.append(line)
    waiting = len(s.files) - s.ended
    if s.command == "batch submit":
        out.append(f"{s.submitted_now:,} batch(es) created now; "
                   f"{sum(1 for e in s.files if e.batch_id):,} of {len(s.files):,} files "
                   "submitted")
    else:
        out.append(f"{s.ended:,} of {len(s.files):,} batches ended"
                   + (f", {waiting:,} not yet" if waiting else "")
                   + (f"; {s.downloaded_now:,} result file(s) downloaded now" if
                      s.downloaded_now else ""))
    return out
