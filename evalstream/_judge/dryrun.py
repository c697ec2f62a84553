"""``--dry-run``: what a judge run would send and cost, without sending anything.

Reads the states as the run would, builds every request, looks each up in the store (opened
read-only: a dry run creates nothing), and counts the input tokens of every request it would
send (``tokens``). The output tokens are bounded by ``--max-output-tokens``, so the cost is an
upper bound; beside it, the expected cost from the output tokens of answers already in the
store for each rubric and the model (p50 and p95: ``expected``), or a sentence that there are
none. Prices come only from ``--price-in`` and ``--price-out`` (a jury's, from each juror's
`price_in` and `price_out`). A panel counts every juror's every sample not stored, a request
for several samples (``n``) with its input once, and says each juror's part: its worst case
and its expected cost, from the stored answers of its own model.
"""

from __future__ import annotations

import sqlite3

from msgspec import Struct

from evalstream._judge import inputs, pairs, tokens
from evalstream._judge.expected import Expected, Sample
from evalstream._judge.live import Options, held, jury_of, no_pairwise_panel, store_path
from evalstream._judge.report import Prices
from evalstream._judge.store import Store
from evalstream._judge.votes import grouped, requests
from evalstream._verdicts.cost import price, usd
from evalstream.errors import UsageError


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
    # The output tokens to expect from this juror's model's stored answers, and their cost.
    expected: Expected
    cost_p50_usd: float | None
    cost_p95_usd: float | None


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
    # The output tokens to expect, from answers already stored (p50, p95), and the cost at
    # them (None: no prices, or a rubric with no answer to go by); a panel's add up its
    # jurors'.
    expected: Expected
    cost_p50_usd: float | None
    cost_p95_usd: float | None
    model: str = ""
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
    samples = [Sample() for _ in jury.jurors]  # each juror's stored answers and votes to send
    store = Store(path_of_store, readonly=True)
    reader = inputs.Reader(opts.max_line_bytes)
    orders = pairs.Orders()
    try:
        with held(opts) as source:
            for item in orders.items(reader.read_held(source)):
                if isinstance(item, inputs.Exact):
                    exact += 1
                    continue
                if not isinstance(item, inputs.JudgeState | pairs.Pair):
                    continue  # a reject: counted by the reader (or by `orders`)
                for state in item if isinstance(item, pairs.Pair) else (item,):
                    states += 1
                    if state.pair is not None and jury.panel:
                        raise UsageError(no_pairwise_panel(opts, state))
                    for j, juror, req, keys in requests(jury, state):
                        asks = juror.config.of(state)
                        needed = []
                        for key in keys:
                            found = store.get(key)
                            if found is not None and not (opts.retry_unscored
                                                          and asks.parse(found.body).cause):
                                sent[j][2] += 1
                                samples[j].answered(state.rubric_id, found.output_tokens)
                            elif seen.execute("INSERT OR IGNORE INTO seen VALUES (?)",
                                              (key,)).rowcount == 0:
                                duplicates += 1
                            else:
                                needed.append(key)
                                samples[j].sending(state.rubric_id)
                        grouped_asks = grouped(jury, j, req.body, tuple(needed))
                        if grouped_asks:
                            each = tokens.request_tokens(asks.system(state.question),
                                                         state.state, counters[j].encoding,
                                                         state.pair is not None)
                            sent[j][0] += len(grouped_asks)
                            sent[j][1] += len(needed)
                            sent[j][3] += each * len(grouped_asks)  # input billed once a request
                            sent[j][4] += juror.config.max_output_tokens * len(needed)
        expected = [sample.expected(store.output_tokens(juror.config.provider,
                                                        juror.config.model))
                    for sample, juror in zip(samples, jury.jurors, strict=True)]
    finally:
        store.close()
        seen.close()
    lines, blank = reader.counts.lines, reader.counts.blank
    rejected = reader.counts.rejected + orders.rejected
    jurors = []
    for juror, counter, (requests_, votes, stored, input_tokens, bound), hoped in zip(
            jury.jurors, counters, sent, expected, strict=True):
        prices = price(juror.price_in, juror.price_out)
        jurors.append(DryRunJuror(
            name=juror.name, model=juror.config.model, samples=juror.samples,
            to_send=requests_, votes_to_send=votes, stored=stored, input_tokens=input_tokens,
            tokenizer=counter.encoding, tokens_exact=counter.exact, output_tokens_bound=bound,
            prices=prices, cost_bound_usd=_cost(prices, input_tokens, bound), expected=hoped,
            cost_p50_usd=_cost(prices, input_tokens, hoped.output_tokens_p50),
            cost_p95_usd=_cost(prices, input_tokens, hoped.output_tokens_p95)))
    config, counter = opts.config, counters[0]
    prices = price(opts.price_in, opts.price_out)
    return DryRun(
        input=opts.input, store=path_of_store, lines=lines, judge_states=states,
        exact_verdicts=exact, rejected=rejected, blank=blank,
        to_send=sum(j.to_send for j in jurors), stored=sum(j.stored for j in jurors),
        duplicates=duplicates, input_tokens=sum(j.input_tokens for j in jurors),
        tokenizer=counter.encoding, tokens_exact=all(c.exact for c in counters),
        tokens_note=counter.note, max_output_tokens=config.max_output_tokens,
        output_tokens_bound=sum(j.output_tokens_bound for j in jurors),
        reasoning=any(j.config.api.reasons(j.config) for j in jury.jurors),
        prices=prices, cost_bound_usd=_total([j.cost_bound_usd for j in jurors]),
        max_requests=opts.max_requests,
        expected=expected[0] if len(jurors) == 1 else _added(expected),
        cost_p50_usd=_total([j.cost_p50_usd for j in jurors]),
        cost_p95_usd=_total([j.cost_p95_usd for j in jurors]),
        model=config.model if opts.jury is None else jury.name,
        jurors=jurors if jury.panel else None)


def _cost(prices: Prices | None, input_tokens: int, output_tokens: int | None) -> float | None:
    """USD for these tokens at these prices (None: no prices, or no output count to go by)."""
    if prices is None or output_tokens is None:
        return None
    return round(usd(input_tokens, output_tokens, prices.input, prices.output), 6)


def _total(costs: list[float | None]) -> float | None:
    """The sum of every juror's cost, or None when one is not known."""
    return None if None in costs else round(sum(c for c in costs if c is not None), 6)


def _added(each: list[Expected]) -> Expected:
    """A panel's expected output tokens: its jurors' added up (each juror's rows are in its
    own ``DryRunJuror.expected``)."""
    p50 = [e.output_tokens_p50 for e in each]
    p95 = [e.output_tokens_p95 for e in each]
    return Expected([], None if None in p50 else sum(n for n in p50 if n is not None),
                    None if None in p95 else sum(n for n in p95 if n is not None))
