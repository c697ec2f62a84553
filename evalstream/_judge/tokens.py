"""Token counts of a judge request, for ``--dry-run`` (cost) and ``--tpm``/``--max-cost``.

The text of the two messages is counted exactly (``evalstream._checks.encodings``: offline,
hash-checked, tiktoken's counts) with the tokenizer of the model's family where its provider
knows it (``Provider.encoding``), plus the request's framing as build's budget counts it
(``_checks.tokens.FRAMING``: the chat overhead OpenAI documents for its models, 3 tokens a
message, its role, and 3 that prime the reply, and the answer's schema as its JSON text,
whose cost no provider documents). For families whose tokenizer is not public (Anthropic)
or not known (open models) the count uses ``--tokenizer`` (default o200k_base), is an
estimate, and says so.

The state is counted through the process's piece cache (``checks.tokens``), cut as build
cuts states: a policy or system prompt repeated across requests is tokenized once.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from evalstream._checks import encodings
from evalstream._checks.tokens import FRAMING, PAIR_FRAMING, json_text_tokens
from evalstream._judge.providers import get


class Counter(NamedTuple):
    """How a run's requests are counted: the encoding used, whether counts are exact for the
    model, and a sentence saying so."""

    encoding: str
    exact: bool
    note: str


def encoding_for(provider: str, model: str) -> str | None:
    """The model family's encoding, or None when it is not known offline (the provider's
    ``encoding``: OpenAI's models by tiktoken's table)."""
    return get(provider).encoding(model)


def counter(provider: str, model: str, tokenizer: str | None = None) -> Counter:
    """The counter for a model: ``tokenizer`` when given, else its family's encoding when
    known, else the default (o200k_base); the note says which, and whether it is exact."""
    family = encoding_for(provider, model)
    how = ("exact counts of the message text, plus OpenAI's documented chat overhead and the "
           "answer's schema as its JSON text")
    if family is None:
        why = get(provider).tokenizer_unknown(model)
        encoding = encodings.check_name(tokenizer or encodings.DEFAULT)
        given = "--tokenizer" if tokenizer else "the default"
        return Counter(encoding, False, f"{why}; counted with {encoding} ({given}), an "
                                        "estimate")
    if tokenizer is not None and encodings.check_name(tokenizer) != family:
        return Counter(tokenizer, False, f"counted with {tokenizer} (--tokenizer), not "
                                         f"{model}'s {family}: an estimate")
    return Counter(family, True, f"{family}, the encoding of {model}: {how}")


def count(text: str, encoding: str) -> int:
    """The exact number of ``encoding`` tokens in ``text`` (special tokens read as text)."""
    return encodings.count(text, encoding)


@lru_cache(maxsize=1_024)
def _system_tokens(system: str, encoding: str) -> int:
    # One system text per rubric, the same for all its requests.
    return encodings.count(system, encoding)


def request_tokens(system: str, user: str, encoding: str, pairwise: bool = False) -> int:
    """Input tokens of a two-message chat request: its framing (as build's budget counts
    it: ``pairwise``, a pairwise state's, whose schema is longer) and the text. ``user`` is
    the state's JSON text."""
    return ((PAIR_FRAMING if pairwise else FRAMING)[encoding] + _system_tokens(system, encoding)
            + json_text_tokens(user.encode(), encoding))
