"""The judge's token budget: a byte bound decides most states, exact counts do the rest.

What is decided and what is read are kept apart. A token of either encoding is at least one
byte of UTF-8, so a state whose JSON plus the longest question fits the budget in bytes
fits in tokens: ``build`` decides most states that way without loading a tokenizer, and
its records then give those UTF-8 sizes as ``bytes`` (upper bounds), never as tokens.
Only where the bytes do not fit is the state counted exactly (``exact`` in the record);
``build --exact-tokens`` and ``stats`` count every state. Text is counted as ordinary
text (``encodings``): a special-token string inside a case counts as the characters it is.

**Counts are additive over cuts that are piece boundaries.** Both encodings first split
text into pieces with a regular expression (``encodings.SPECS``) and merge bytes within a
piece only, so count(T) = count(T[:p]) + count(T[p:]) when (i) a piece of T ends at p and
(ii) no piece's match before p looks at the character at p: then T[:p] and T[p:] split into
exactly T's pieces. Neither pattern looks behind; the only tests of what follows a piece
are ``$`` and ``(?!\\S)``, reached only at the end of a run of whitespace. Two cuts hold in
both patterns, and evalstream cuts only there:

* **K: at an ASCII letter after two ASCII punctuation characters** (``{"user_input``,
  ``,"policy``, ``[{"id``, ``},{"id``). Punctuation is in ``[^\\s\\p{L}\\p{N}]`` and in no
  letter or mark class. The piece that holds p-2 cannot be a letter piece (a letter piece
  takes one non-letter only as its first character, and must go on with a letter or mark,
  but p-1 is punctuation; cl100k's ``'s``-type piece needs a letter after the apostrophe),
  nor digits or whitespace: it is the punctuation alternative (cl100k ``
  ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+``, o200k `` ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*``), which takes
  p-1 too and stops at the letter: (i). A letter at p could be a later character only of a
  letter piece that began at p-1 (none does) or took p-2 and p-1 as letters (they are not);
  no whitespace run ends at p: (ii). One punctuation character is not enough: ``(word`` is
  one piece in both encodings.
* **W: at the space of ``[A-Za-z] [A-Za-z]``.** The letter before it ends a letter piece
  (no letter class and no contraction suffix takes a space); a space at p could be a later
  character only of a whitespace piece that took the letter at p-1; no whitespace run ends
  at p. ASCII letters never occur inside a multi-byte character, and in a JSON escape
  (``\\n word``) the ``n`` is still a letter, so the rule holds on the raw JSON.

Cuts that look alike are not safe in both (checked by the tests: ``don|'t`` is a boundary
in cl100k, not in o200k; ``camel|Case`` the other way round). A property test checks the
sum of the pieces against a whole-text count for both encodings; ``tests/checks`` also
checks each rule's cut positions on generated and real states.

**Counted once.** A state is cut (K) before each top-level key, so a field's segment is the
same bytes in every state that shows it; a list field is also cut before an item's ``id``
once the piece since the last cut is at least ``ITEM_MIN`` bytes (a policy repeated as a
system message, a RAG passage, a tool output); a piece longer than ``PART`` is cut (W)
about every ``PART`` bytes. Each piece's count is kept in a cache shared by every case of
the run: the key is the xxh3-128 hash of its bytes, bounded to ``CACHE_ENTRIES`` entries
(least recently used first out; ~130 bytes an entry: 2.1 MiB, ``python -m benchmarks tokens
cache``), so a policy repeated in every case of a domain is tokenized once per process. Where every
state is counted to the end (``stats``, ``build --exact-tokens``), the Checker counts a field's
segment (``segment``: from its name through the ``,"`` or ``}`` that follows it; K cuts at
both ends) once a case and adds up a state's segments, however many rubrics show the field:
the same exact figure, without joining, cutting and hashing each state again. Two
different pieces with the same hash would share a count: about 2^-128 for a pair of pieces,
but xxh3 is not made to resist collisions built on purpose, so a dataset crafted for it
could misstate a token figure of its own states.

**Counting stops early, the same way whatever the cache holds.** A token is at most
``MAX_TOKEN_BYTES`` (128) bytes, so the text not yet counted is at least a 128th of its
bytes in tokens. Before each piece, cached or not, counting stops when what is counted plus
that bound exceeds the limit; after each piece, when what is counted does. The figure
reported for an over-budget state is then a lower bound ("at least"), and it depends only on
the state's bytes: never on the cache, the order of cases, or the worker that read them.
Hostile text (a megabyte without a space) is rejected at the cost of its length.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from functools import cache

import msgspec
import xxhash

from evalstream._checks import encodings
from evalstream._checks.encodings import DEFAULT, MAX_TOKEN_BYTES, Tokenizer, tokenizer
from evalstream._checks.state import ANSWER_SCHEMA, PAIRWISE_SCHEMA, Reserved

DEFAULT_BUDGET = 32_000
DEFAULT_OUTPUT = 1_024  # the judge's --max-output-tokens, which build reserves by default
# Every judge request's tokens beyond its two texts (the system text and the state): the chat
# framing OpenAI documents for its models (3 tokens a message and its role, and 3 that prime
# the reply: the OpenAI cookbook, "How to count tokens with tiktoken"), and the answer's JSON
# schema, counted as its JSON text (providers turn it into prompt text or a grammar, and none
# documents its cost; the schema with `na`, the longer). Written here per encoding so that a
# budget whose states fit in bytes never loads a tokenizer; ``framing_tokens`` counts them,
# and tests/checks/test_tokens.py checks that these are its counts.
PER_MESSAGE, REPLY_PRIMING, ROLES = 3, 3, ("system", "user")
FRAMING = {"o200k_base": 53, "cl100k_base": 51}  # the schema asks for the reason first (issue 26)
# The same with a pairwise answer's schema (issue 28: `{reason, better}`, a few tokens longer),
# for a rubric set with a pairwise rubric (``Budget(pairwise=True)``).
PAIR_FRAMING = {"o200k_base": 57, "cl100k_base": 55}


def framing_tokens(encoding: str, pairwise: bool = False) -> int:
    """The framing of one judge request in ``encoding`` tokens, counted (``FRAMING``, or
    ``PAIR_FRAMING`` with a pairwise answer's schema)."""
    count = tokenizer(encoding).count
    schema = PAIRWISE_SCHEMA if pairwise else ANSWER_SCHEMA
    return (len(ROLES) * PER_MESSAGE + sum(count(role) for role in ROLES) + REPLY_PRIMING
            + count(msgspec.json.encode(schema).decode()))
CACHE_ENTRIES = 16_384
ITEM_MIN = 1 << 10
PART = 1 << 15
# Pieces shorter than this are counted, never looked up: on both generators' cases no piece
# of 32 bytes to 1 KiB was ever seen twice (the repeated ones are policies and list items,
# cut at ITEM_MIN and longer), and counting 1 KiB (~7 us) costs about what a miss's hashing
# and LRU bookkeeping add to it (measured 2026-12-04 over stats of 100 MB of each generator's
# cases: lookups and hits by piece size; toktok ~0.4 us + 6 ns a byte, a lookup ~1 us).
CACHE_MIN = ITEM_MIN


class PieceCounts:
    """Token counts of pieces, by the xxh3-128 hash of their bytes: a bounded LRU map."""

    def __init__(self, tokenizer: Tokenizer, entries: int | None = None) -> None:
        self.count_text = tokenizer.count
        self.entries = CACHE_ENTRIES if entries is None else entries
        self._counts: OrderedDict[int, int] = OrderedDict()
        self.lookups = self.hits = 0  # for the benchmarks' hit rate
        self.bytes_looked = self.bytes_hit = 0

    def __len__(self) -> int:
        return len(self._counts)

    def count(self, piece: bytes) -> int:
        """The exact token count of ``piece`` (UTF-8, cut at ASCII characters only)."""
        self.lookups += 1
        self.bytes_looked += len(piece)
        if len(piece) < CACHE_MIN:
            return self.count_text(piece.decode("utf-8"))
        key = xxhash.xxh3_128_intdigest(piece)
        counts = self._counts
        n = counts.get(key)
        if n is not None:
            counts.move_to_end(key)
            self.hits += 1
            self.bytes_hit += len(piece)
            return n
        n = self.count_text(piece.decode("utf-8"))
        if len(counts) >= self.entries:
            counts.popitem(last=False)
        counts[key] = n
        return n


@cache
def piece_counts(name: str) -> PieceCounts:
    """The one piece-count cache of an encoding in this process (``CACHE_ENTRIES``)."""
    return PieceCounts(tokenizer(name))


class Budget:
    """Decides whether a judge request fits ``max_tokens`` (the judge model's context): a
    judge state, the longest system text (``questions``: question and answer instruction),
    the request's framing and the answer's bound (``output``, the judge's
    --max-output-tokens); counts states exactly where that is asked (``exact``) or the bytes
    do not fit. ``pairwise``: the set has a pairwise rubric, whose requests' framing (its
    answer's schema) is the longer (``PAIR_FRAMING``).

    The tokenizer is loaded at the first count, never for a state whose bytes fit (unless
    ``exact``). Counts are those of ``tokenizer`` (``encodings.ENCODINGS``).
    """

    def __init__(self, max_tokens: int, questions: Sequence[str], tokenizer: str = DEFAULT,
                 exact: bool = False, pieces: PieceCounts | None = None,
                 output: int = DEFAULT_OUTPUT, pairwise: bool = False,
                 volume: int | None = None) -> None:
        """``volume``: the bytes of cases a run with ``exact`` counts will read (its input's
        size), so that the tokenizer can choose its counter for that much text."""
        if exact and volume is not None:
            encodings.tokenizer(tokenizer).expect(volume)  # loads nothing yet
        self.max_tokens = max_tokens
        self.tokenizer = tokenizer
        self.exact = exact
        self._questions = list(questions)
        self.longest_question_bytes = max((len(q.encode()) for q in questions), default=0)
        self._question_tokens: list[int] | None = None
        self._longest_question: int | None = None
        self._pieces = pieces
        self.reserved = Reserved((PAIR_FRAMING if pairwise else FRAMING)[tokenizer], output)
        self.held = self.reserved.framing + output  # tokens no text holds
        # States of at most this many bytes fit without counting.
        self.byte_room = max_tokens - self.longest_question_bytes - self.held

    def preload(self) -> None:
        """Load now the counter a budget that counts every state (``exact``) loads at its
        first count, for the worker processes forked after this to share."""
        if self.exact:
            encodings.tokenizer(self.tokenizer).preload()

    @property
    def pieces(self) -> PieceCounts:
        """The piece counts this budget uses: by default the process's one cache for its
        tokenizer, so that a worker keeps it from one byte range to the next."""
        if self._pieces is None:
            self._pieces = piece_counts(self.tokenizer)
        return self._pieces

    @property
    def question_tokens(self) -> list[int]:
        """The exact token count of each question, preamble included (loads the tokenizer)."""
        if self._question_tokens is None:
            count = tokenizer(self.tokenizer).count
            self._question_tokens = [count(q) for q in self._questions]
        return self._question_tokens

    @property
    def longest_question(self) -> int:
        """The exact token count of the longest question (loads the tokenizer)."""
        if self._longest_question is None:  # asked for every state counted: 2% of stats
            self._longest_question = max(self.question_tokens, default=0)
        return self._longest_question

    def limit(self) -> int | None:
        """Where counting a state may stop: past the room the longest system text and the
        reserved tokens leave, or never when every state is counted exactly."""
        return None if self.exact else self.max_tokens - self.longest_question - self.held

    def state_tokens(self, state: bytes, names: Sequence[str],
                     limit: int | None = None) -> tuple[int, bool]:
        """The token count of a state's JSON and whether it is exact (see the module
        docstring). Past ``limit`` counting stops: the count is then a lower bound above
        ``limit``. ``names`` are the state's top-level keys, in order."""
        return count_state(self.pieces, state, names, limit)

    def segment_tokens(self, segment: bytes) -> int:
        """The exact token count of a field's segment (``segment``), cut inside as a state
        is (list items, long runs of words) and counted through the piece cache."""
        if len(segment) <= ITEM_MIN:  # one piece: nothing to cut (``piece_ends``)
            return self.pieces.count(segment)
        return count_state(self.pieces, segment, ())[0]


def segment(key: bytes, value: bytes, last: bool) -> bytes:
    """The bytes of a state that one field holds between two K cuts: from its name (from the
    state's ``{`` for the first field, whose ``key`` is ``{"name":``; ``,"name":`` for the
    others) through its value and what follows it (``,"`` of the next key, or the closing
    ``}``). A state's count is the sum of its fields' segments' counts, and a field's segment
    is the same bytes in every state of a case that shows it in the same place, so a run that
    counts every state exactly counts each segment once per case (``checks.Checker``)."""
    return (key if key[:1] == b"{" else key[2:]) + value + (b"}" if last else b',"')


def count_state(pieces: PieceCounts, state: bytes, names: Sequence[str],
                limit: int | None = None) -> tuple[int, bool]:
    """``Budget.state_tokens`` with the piece counts given."""
    count = pieces.count
    total, start, size = 0, 0, len(state)
    for end in piece_ends(state, names):
        if limit is not None and total + -(-(size - start) // MAX_TOKEN_BYTES) > limit:
            # The rest is at least a 128th of its bytes in tokens: already over.
            return total + -(-(size - start) // MAX_TOKEN_BYTES), False
        total += count(state[start:end])
        start = end
        if limit is not None and total > limit:
            return total, start == size
    return total, True


_OBJECT_KEYS = msgspec.json.Decoder(dict[str, msgspec.Raw])


def json_text_tokens(text: bytes, tokenizer: str = DEFAULT) -> int:
    """The exact token count of JSON text (a judge state as build wrote it, in a judge
    request), through the process's piece cache: cut as ``build`` cuts a state, so a field
    repeated across requests is counted once. Any other text counts exactly too."""
    try:
        names: Sequence[str] = list(_OBJECT_KEYS.decode(text))
    except msgspec.DecodeError:
        names = ()
    return count_state(piece_counts(tokenizer), text, names)[0]


def piece_ends(state: bytes, names: Sequence[str], item_min: int = ITEM_MIN,
               part: int = PART) -> Iterator[int]:
    """Where the pieces of a state end, in order, the last at ``len(state)``: before each
    top-level key but the first (cut K), before an item's ``id`` in a list once the piece
    is ``item_min`` bytes long (K), inside a longer piece about every ``part`` bytes (W).
    Found lazily: once counting stops, the rest of the state is never scanned."""
    size, start, find = len(state), 0, 0
    for name in (*names[1:], None):
        end = size
        if name is not None:
            # A key is found as `,"name":`. A value before it cannot hold that text (a
            # string's quotes are escaped, and only the last field, tool_events, holds
            # objects with free keys); a key that is not found, or that does not start with
            # an ASCII letter (not cut K), only makes the pieces longer: any cut of kind K is
            # a boundary, wherever it falls, so the count stays exact.
            at = state.find(b',"%s":' % name.encode(), find)
            if at < 0 or not _is_letter(state[at + 2]):
                continue
            end = find = at + 2
        while start < end:
            cut = _next_item(state, start + item_min, end)
            while cut - start > part:
                word = _word_cut(state, start + part, cut)
                if word < 0:
                    break
                yield word
                start = word
            yield cut
            start = cut


def _next_item(state: bytes, pos: int, end: int) -> int:
    """The position of the next item's ``id`` after ``[{"`` or ``},{"`` at or after ``pos``
    and before ``end``, else ``end``. A literal find runs at memchr speed; a regular
    expression measured several times slower over long states."""
    while True:
        i = state.find(b'{"id":', pos, end)
        if i < 1:
            return end
        before = state[i - 1]
        if before == 0x5B or (before == 0x2C and i >= 2 and state[i - 2] == 0x7D):  # [{" },{"
            return i + 2
        pos = i + 1


_WORD = re.compile(rb"[A-Za-z] [A-Za-z]")


def _is_letter(byte: int) -> bool:
    return 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A


def _word_cut(state: bytes, pos: int, end: int) -> int:
    """The position of the space in the first ``[A-Za-z] [A-Za-z]`` whose space is at or
    after ``pos`` and that lies wholly before ``end``, else -1."""
    found = _WORD.search(state, pos - 1, end)
    return -1 if found is None else found.start() + 1
