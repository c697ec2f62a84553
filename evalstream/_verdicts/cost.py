"""What judge tokens cost: the one formula of every figure in USD (``judge``'s ``--max-cost``
and its report, ``--dry-run``'s bounds, ``batch collect``'s report, ``agree``'s cost per
1,000 judge states over several runs).

Prices are USD per million tokens, as the providers quote them and as every ``--price*``
option takes them; evalstream keeps no price table. It sits here, under the verdict format
whose ``usage`` it prices, so that ``_verdicts/`` and ``_judge/`` (above it) share it.
"""

from __future__ import annotations

from msgspec import Struct

PER_TOKENS = 1e6  # prices are quoted per million tokens


class Price(Struct):
    """USD per million input and output tokens (of one model, or as given with --price-in
    and --price-out): the one price record of every report that shows one (judge's, a
    juror's, batch collect's, ``agree`` over several runs')."""

    input: float
    output: float


def price(price_in: float | None, price_out: float | None) -> Price | None:
    """The price given (``--price-in`` and ``--price-out``, or a juror's), or None unless
    both halves are: no cost is ever computed from half a price."""
    return None if price_in is None or price_out is None else Price(price_in, price_out)


def usd(input_tokens: int, output_tokens: int, price_in: float, price_out: float) -> float:
    """USD for these tokens at these prices (USD per million input and output tokens), not
    rounded: a caller rounds what it reports, after any sum."""
    return (input_tokens * price_in + output_tokens * price_out) / PER_TOKENS
