"""``--dry-run``: what a judge run would send and cost, without sending anything.

Reads the states as the run would, builds every request, looks each up in the store (opened
read-only: a dry run creates nothing), and counts the input tokens of every request it would
send (``tokens``). The output tokens are bounded by ``--max-output-tokens``, so the cost is an
upper bound; beside it, the expected cost from the output tokens of answers already in the
store for each rubric and the model (p50 and p95: ``expected``), or a sentence that there are
none. Prices come only from ``--price-in`` and ``--price-out``.
"""

from __future__ import annotations

import sqlite3

from msgspec import Struct

from evalstream._judge import inputs, pairs, tokens
from evalstream._judge.expected import Expected, Sample
from evalstream._judge.live import Options, held, store_path
from evalstream._judge.report import Prices
from evalstream._judge.request import build
from evalstream._judge.store import Store


class DryRun(Struct):
    """What a run would do: requests, tokens and the cost bound."""

    input: str
    store: str
    lines: int
    judge_states: int
    exact_verdicts: int
    rejected: int
    blank: int
    to_send: int
    stored: int  # judge states whose answer is stored (re-used, not paid again)
    duplicates: int  # judge states whose request another state of the input already makes
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
    # them (None: no prices, or a rubric with no answer to go by).
    expected: Expected
    cost_p50_usd: float | None
    cost_p95_usd: float | None
    model: str = ""


def dry_run(opts: Options) -> DryRun:
    """Count what ``opts`` would send, make no request and write nothing."""
    config = opts.config
    path_of_store = store_path(opts)
    counter = tokens.counter(config.provider, config.model, opts.tokenizer)
    # Requests already counted, on disk: a set of keys would grow with the input.
    seen = sqlite3.connect("", isolation_level=None)
    seen.execute("CREATE TABLE seen (key TEXT PRIMARY KEY) WITHOUT ROWID")
    states = exact = to_send = stored = duplicates = 0
    input_tokens = 0
    sample = Sample()
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
                    asks = config.of(state)
                    req = build(asks, state.question, state.state)
                    found = store.get(req.key)
                    if found is not None and not (opts.retry_unscored
                                                  and asks.parse(found.body).cause):
                        stored += 1
                        sample.answered(state.rubric_id, found.output_tokens)
                        continue
                    if seen.execute("INSERT OR IGNORE INTO seen VALUES (?)",
                                    (req.key,)).rowcount == 0:
                        duplicates += 1
                        continue
                    to_send += 1
                    sample.sending(state.rubric_id)
                    input_tokens += tokens.request_tokens(
                        asks.system(state.question), state.state, counter.encoding,
                        state.pair is not None)
        expected = sample.expected(store.output_tokens(config.provider, config.model))
    finally:
        store.close()
        seen.close()
    lines, blank = reader.counts.lines, reader.counts.blank
    rejected = reader.counts.rejected + orders.rejected
    prices = None if opts.price_in is None or opts.price_out is None else Prices(
        opts.price_in, opts.price_out)
    output_bound = to_send * config.max_output_tokens

    def cost(output_tokens: int | None) -> float | None:
        if prices is None or output_tokens is None:
            return None
        return round((input_tokens * prices.input + output_tokens * prices.output) / 1e6, 6)

    return DryRun(
        input=opts.input, store=path_of_store, lines=lines, judge_states=states,
        exact_verdicts=exact, rejected=rejected, blank=blank, to_send=to_send, stored=stored,
        duplicates=duplicates, input_tokens=input_tokens, tokenizer=counter.encoding,
        tokens_exact=counter.exact, tokens_note=counter.note,
        max_output_tokens=config.max_output_tokens, output_tokens_bound=output_bound,
        reasoning=config.api.reasons(config),
        prices=prices, cost_bound_usd=cost(output_bound), max_requests=opts.max_requests,
        expected=expected, cost_p50_usd=cost(expected.output_tokens_p50),
        cost_p95_usd=cost(expected.output_tokens_p95), model=config.model)
