"""``--dry-run``: what a judge run would send and cost, without sending anything.

Reads the states as the run would, builds every request, looks each up in the store (opened
read-only: a dry run creates nothing), and counts the input tokens of every request it would
send (``tokens``). The output tokens are bounded by ``--max-output-tokens``, so the cost is an
upper bound; prices come only from ``--price-in`` and ``--price-out`` (a jury's, from each
juror's `price_in` and `price_out`). A panel counts every juror's every sample not stored, a
request for several samples (``n``) with its input once, and says each juror's part.
"""

from __future__ import annotations

import sqlite3

from msgspec import Struct

from evalstream._judge import inputs, tokens
from evalstream._judge.live import Options, held, jury_of, store_path
from evalstream._judge.report import Prices
from evalstream._judge.request import system_text
from evalstream._judge.store import Store
from evalstream._judge.votes import grouped, requests


class DryRunJuror(Struct):
    """One juror of a panel's dry run: the requests and votes it would be asked for (a
    request may ask for several samples, its input counted once), their input tokens, the
    output bound and the cost bound at its prices."""

    name: str
    model: str
    samples: int
    to_send: int
    votes_to_send: int
    stored: int
    input_tokens: int
    tokenizer: str
    tokens_exact: bool
    output_tokens_bound: int
    prices: Prices | None
    cost_bound_usd: float | None


class DryRun(Struct, omit_defaults=True):
    """What a run would do: requests, tokens and the cost bound (``jurors``: a panel's, each
    juror's; the totals add them up)."""

    input: str
    store: str
    lines: int
    judge_states: int
    exact_verdicts: int
    rejected: int
    blank: int
    to_send: int
    stored: int  # votes whose answer is stored (re-used, not paid again)
    duplicates: int  # votes whose request another state of the input already makes
    input_tokens: int
    tokenizer: str
    tokens_exact: bool
    tokens_note: str
    max_output_tokens: int
    output_tokens_bound: int
    reasoning: bool  # the judge thinks first: the bound holds its reasoning too
    prices: Prices | None
    cost_bound_usd: float | None
    max_requests: int | None
    jurors: list[DryRunJuror] | None = None


def dry_run(opts: Options) -> DryRun:
    """Count what ``opts`` would send, make no request and write nothing."""
    jury = jury_of(opts)
    path_of_store = store_path(opts)
    counters = [tokens.counter(j.config.provider, j.config.model, opts.tokenizer)
                for j in jury.jurors]
    # Requests already counted, on disk: a set of keys would grow with the input.
    seen = sqlite3.connect("", isolation_level=None)
    seen.execute("CREATE TABLE seen (key TEXT PRIMARY KEY) WITHOUT ROWID")
    states = exact = duplicates = 0
    sent = [[0, 0, 0, 0, 0] for _ in jury.jurors]  # requests, votes, stored, input, output
    store = Store(path_of_store, readonly=True)
    reader = inputs.Reader(opts.max_line_bytes)
    try:
        with held(opts) as source:
            for item in reader.read_held(source):
                if isinstance(item, inputs.Exact):
                    exact += 1
                elif not isinstance(item, inputs.JudgeState):
                    continue  # a reject: counted by the reader
                else:
                    states += 1
                    for j, juror, req, keys in requests(jury, item.question, item.state):
                        needed = []
                        for key in keys:
                            found = store.get(key)
                            if found is not None and not (
                                    opts.retry_unscored
                                    and juror.config.api.parse(found.body).cause):
                                sent[j][2] += 1
                            elif seen.execute("INSERT OR IGNORE INTO seen VALUES (?)",
                                              (key,)).rowcount == 0:
                                duplicates += 1
                            else:
                                needed.append(key)
                        asks = grouped(jury, j, req.body, tuple(needed))
                        if asks:
                            each = tokens.request_tokens(system_text(item.question),
                                                         item.state, counters[j].encoding)
                            sent[j][0] += len(asks)
                            sent[j][1] += len(needed)
                            sent[j][3] += each * len(asks)  # input billed once a request
                            sent[j][4] += juror.config.max_output_tokens * len(needed)
    finally:
        store.close()
        seen.close()
    lines, blank, rejected = reader.counts.lines, reader.counts.blank, reader.counts.rejected
    jurors = []
    for juror, counter, (requests_, votes, stored, input_tokens, bound) in zip(
            jury.jurors, counters, sent, strict=True):
        prices = Prices(juror.price_in, juror.price_out) \
            if juror.price_in is not None and juror.price_out is not None else None
        jurors.append(DryRunJuror(
            name=juror.name, model=juror.config.model, samples=juror.samples,
            to_send=requests_, votes_to_send=votes, stored=stored, input_tokens=input_tokens,
            tokenizer=counter.encoding, tokens_exact=counter.exact, output_tokens_bound=bound,
            prices=prices, cost_bound_usd=None if prices is None else round(
                (input_tokens * prices.input + bound * prices.output) / 1e6, 6)))
    config, counter = opts.config, counters[0]
    prices = None if opts.price_in is None or opts.price_out is None else Prices(
        opts.price_in, opts.price_out)
    costs = [j.cost_bound_usd for j in jurors]
    return DryRun(
        input=opts.input, store=path_of_store, lines=lines, judge_states=states,
        exact_verdicts=exact, rejected=rejected, blank=blank,
        to_send=sum(j.to_send for j in jurors), stored=sum(j.stored for j in jurors),
        duplicates=duplicates, input_tokens=sum(j.input_tokens for j in jurors),
        tokenizer=counter.encoding, tokens_exact=all(c.exact for c in counters),
        tokens_note=counter.note, max_output_tokens=config.max_output_tokens,
        output_tokens_bound=sum(j.output_tokens_bound for j in jurors),
        reasoning=any(j.config.api.reasons(j.config) for j in jury.jurors),
        prices=prices, cost_bound_usd=None if None in costs else round(
            sum(c for c in costs if c is not None), 6),
        max_requests=opts.max_requests, jurors=jurors if jury.panel else None)
