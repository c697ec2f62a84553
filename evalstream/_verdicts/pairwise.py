"""A pairwise verdict (issue 28): one verdict per pair of ``build --pair-with``, from the
answers of its two orders.

Each order's judge names ``response_1``, ``response_2`` or ``tie``; read in A/B terms (order
``ab`` shows run A's response first, ``ba`` run B's), the two orders agree when they name the
same run (or both a tie). The pair's decision is that run when they agree, and a tie when
they do not: the conservative reading of a judge that changed its mind with the order (Wang
et al., ACL 2024, "Large Language Models are not Fair Evaluators", average both orders'
scores: with a preference and no score, two opposite preferences average to a tie). An order
whose answer cannot be read makes the pair ``unscored`` (fail-closed: one order alone says
nothing of the position bias it would have shown).

The verdict's record (``records.JudgeVerdict`` with its ``records.PairVerdict``) has one
decision; its ``status`` says the decision in the pass/fail terms every verdict reader
knows, from run A's side: ``pass`` run A's response is the better, ``fail`` run B's, ``na``
a tie (neither is better: the question "is A's the better?" has no answer), ``unscored``.
A pairwise label is written the same way on run A's case (``expected``), so ``agree`` reads
agreement with pairwise labels as it reads any other; the bias audit (``bias``) reads the
``pair`` record.
"""

# No `from __future__ import annotations`: msgspec must resolve the annotations of the
# Structs defined inside ``reader_type``.
from typing import Any, Literal

from msgspec import Struct

DECISIONS = ("a", "b", "tie")
STATUS_OF = {"a": "pass", "b": "fail", "tie": "na"}  # a decision as a verdict's status
# What each order's answer names, in A/B terms.
_RUN_OF = {"ab": {"response_1": "a", "response_2": "b", "tie": "tie"},
           "ba": {"response_1": "b", "response_2": "a", "tie": "tie"}}


def in_runs(order: str, better: str) -> str:
    """An order's answer (``response_1``, ``response_2``, ``tie``) as the run it names (``a``,
    ``b``) or ``tie``."""
    return _RUN_OF[order][better]


def decide(first: str, second: str) -> tuple[str, bool]:
    """The pair's decision (``a``, ``b``, ``tie``) from the answers of order ``ab`` and order
    ``ba``, and whether they agreed: a pair whose orders disagree is a tie."""
    one, two = in_runs("ab", first), in_runs("ba", second)
    return (one, True) if one == two else ("tie", False)


def reader_type(forbid_unknown: bool) -> type[Struct]:
    """The ``pair`` of a verdict as the verdict reader decodes it (strict, or lenient with
    ``--allow-unknown-fields``); also of a pairwise judge state written by build (its
    ``order``), which a verdict file may hold unjudged."""
    opts: dict[str, Any] = {"forbid_unknown_fields": forbid_unknown, "gc": False}

    class Usage(Struct, **opts):
        input_tokens: int
        output_tokens: int

    class Error(Struct, **opts):
        cause: str
        detail: str

    class Order(Struct, **opts):
        order: Literal["ab", "ba"]
        better: Literal["response_1", "response_2", "tie"] | None = None
        reason: str | None = None
        usage: Usage | None = None
        request_id: str | None = None
        state_hash: str | None = None
        error: Error | None = None

    class Pair(Struct, **opts):
        key: str
        chars: tuple[int, int]
        order: Literal["ab", "ba"] | None = None  # a judge state's
        decision: Literal["a", "b", "tie"] | None = None
        agreed: bool | None = None
        orders: list[Order] = []

    return Pair
