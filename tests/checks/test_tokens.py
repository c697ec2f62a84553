"""The budget's counting: cuts that keep counts additive in both encodings, a cache that
changes nothing but time, and counting that stops early with a true lower bound.

Every count is checked against tiktoken's count of the whole text (``tests.helpers.oracle``).
"""

from __future__ import annotations

import os
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream._checks import encodings, tokens
from evalstream._checks.state import STATE_NAMES
from tests.checks.test_encodings import FRAGMENTS
from tests.helpers import oracle

ENCODINGS = encodings.ENCODINGS
EXAMPLES = int(os.environ.get("EVALSTREAM_EXAMPLES", "300"))


def whole(text: str | bytes, name: str) -> int:
    if isinstance(text, bytes):
        text = text.decode()
    return len(oracle(name).encode_ordinary(text))


def budget(name: str, entries: int = tokens.CACHE_ENTRIES) -> tokens.Budget:
    """A budget with a cache of its own (not the process's)."""
    return tokens.Budget(1_000, ["question"], name,
                         pieces=tokens.PieceCounts(encodings.tokenizer(name), entries))


def pieces_of(state: bytes, names: list[str], item_min: int = tokens.ITEM_MIN,
              part: int = tokens.PART) -> list[bytes]:
    ends = list(tokens.piece_ends(state, names, item_min, part))
    return [state[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]


# -- cuts -------------------------------------------------------------------------------------
nasty = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.sampled_from(
    ["word ", "Word ", "a b", " x", "{}", '"', ',"', '[{"id":', '},{"id":', "id", " ", "ab cd "])),
    max_size=30).map("".join)
json_value = st.recursive(
    st.one_of(nasty, st.integers(), st.floats(allow_nan=False), st.booleans(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(nasty, inner, max_size=3)), max_leaves=8)
items = st.lists(st.fixed_dictionaries({"id": nasty, "text": nasty}), max_size=5)
messages = st.lists(st.fixed_dictionaries({"id": nasty, "role": st.sampled_from(
    ["system", "user"]), "content": nasty}), max_size=5)
events = st.lists(st.fixed_dictionaries({"id": nasty, "name": nasty, "status": st.just("success"),
                                         "input": json_value, "output": json_value}), max_size=4)
FIELD_VALUES = {"user_input": nasty, "assistant_response": nasty, "conversation": messages,
                "reference_material": items, "policy": nasty, "tool_events": events}


@st.composite
def states(draw: Any) -> tuple[bytes, list[str]]:
    """A judge state as build writes it: some of the fields, in the fixed order, by msgspec."""
    names = [n for n in STATE_NAMES if draw(st.booleans())] or ["user_input"]
    state = {n: draw(FIELD_VALUES[n]) for n in names}
    return msgspec.json.encode(state), names


@pytest.mark.slow
@settings(max_examples=EXAMPLES // 2, deadline=None)
@given(sample=states(), name=st.sampled_from(ENCODINGS), item_min=st.sampled_from([1, 16, 1024]),
       part=st.sampled_from([4, 32, 1 << 15]))
def test_pieces_add_up_to_the_whole(sample: tuple[bytes, list[str]], name: str, item_min: int,
                                    part: int) -> None:
    state, names = sample
    pieces = pieces_of(state, names, item_min, part)
    assert b"".join(pieces) == state and all(pieces)
    assert sum(whole(p, name) for p in pieces) == whole(state, name)


def _cut_points(text: str) -> list[int]:
    """Every position of text where rule K (two ASCII punctuation, then an ASCII letter) or
    rule W (the space of ``[A-Za-z] [A-Za-z]``) allows a cut."""
    letter = str.isalpha
    out = []
    for p in range(2, len(text)):
        a, b, c = text[p - 2], text[p - 1], text[p]
        punct = all(x.isascii() and not x.isalnum() and not x.isspace() for x in (a, b))
        if punct and c.isascii() and letter(c):
            out.append(p)
        elif p + 1 < len(text) and c == " " and b.isascii() and letter(b) \
                and text[p + 1].isascii() and letter(text[p + 1]):
            out.append(p)
    return out


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None)
@given(text=st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.sampled_from(
    ['"a', ',"b', "{'", "(x", "ab cd", "Ab Cd", "!?z", "))A", " '", '"\'s', "a b"])),
    max_size=40).map("".join), name=st.sampled_from(ENCODINGS))
def test_every_cut_the_rules_allow_keeps_counts_additive(text: str, name: str) -> None:
    """The proof's two rules, checked at every position they allow, not only where build
    cuts: the text cut at all of them counts as the whole."""
    cuts = _cut_points(text)
    bounds = [0, *cuts, len(text)]
    assert sum(whole(text[a:b], name) for a, b in zip(bounds[:-1], bounds[1:], strict=True)) \
        == whole(text, name)


@pytest.mark.parametrize(("name", "text", "cut"), [
    # Cuts that look alike but are not piece boundaries in one of the encodings: the check
    # above would catch a rule that allowed them.
    ("o200k_base", "I don't know", 5),  # before the apostrophe: o200k keeps `don't` whole
    ("cl100k_base", "JavaScript", 4),  # lower/upper: o200k splits here, cl100k does not
    ("cl100k_base", "(word", 1),  # one punctuation character: the letter piece takes it
    ("o200k_base", "(word", 1),
    ("cl100k_base", "12345", 1),  # inside digits
    ("o200k_base", "12345", 1),
])
def test_cuts_the_rules_refuse_do_change_counts(name: str, text: str, cut: int) -> None:
    assert cut not in _cut_points(text)
    assert whole(text[:cut], name) + whole(text[cut:], name) != whole(text, name)


def test_build_cuts_only_where_the_rules_allow() -> None:
    conversation = [{"id": f"m{i}", "role": "user", "content": "lorem ipsum " * 200}
                    for i in range(20)]
    state = msgspec.json.encode({"user_input": "hi", "conversation": conversation,
                                 "policy": "be kind " * 10_000})
    names = ["user_input", "conversation", "policy"]
    ends = list(tokens.piece_ends(state, names))
    text = state.decode()
    allowed = set(_cut_points(text))
    assert ends[-1] == len(state) and all(p in allowed for p in ends[:-1])
    pieces = pieces_of(state, names)
    assert max(map(len, pieces)) <= tokens.PART + 16
    assert any(p.startswith(b'id":"m') for p in pieces)  # list items are pieces of their own
    assert pieces[1].startswith(b'conversation":')  # fields are pieces of their own
    assert any(p.startswith(b'policy":') for p in pieces)


# -- counting a state -----------------------------------------------------------------------
@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None)
@given(sample=states(), name=st.sampled_from(ENCODINGS))
def test_a_state_counts_as_its_whole_text(sample: tuple[bytes, list[str]], name: str) -> None:
    state, names = sample
    assert budget(name).state_tokens(state, names) == (whole(state, name), True)


def segments_of(state: dict[str, Any]) -> list[bytes]:
    """A state's fields cut as the Checker cuts them when it counts every state: each field's
    key (``{"name":`` first, then ``,"name":``) and value, encoded apart (``tokens.segment``)."""
    names = list(state)
    return [tokens.segment((b"{" if i == 0 else b",") + msgspec.json.encode(n) + b":",
                           msgspec.json.encode(state[n]), i == len(names) - 1)
            for i, n in enumerate(names)]


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data(), name=st.sampled_from(ENCODINGS))
def test_a_state_counts_as_the_sum_of_its_fields_segments(data: Any, name: str) -> None:
    """What stats and --exact-tokens count: each field's segment apart (once a case), summed."""
    names = [n for n in STATE_NAMES if data.draw(st.booleans())] or ["user_input"]
    state = {n: data.draw(FIELD_VALUES[n]) for n in names}
    segments = segments_of(state)
    assert b"".join(segments) == msgspec.json.encode(state)
    b = budget(name)
    assert sum(b.segment_tokens(s) for s in segments) == whole(msgspec.json.encode(state), name)


@settings(max_examples=60, deadline=None)
@given(n_messages=st.integers(1, 60), words=st.integers(1, 400), limit=st.integers(1, 30_000),
       name=st.sampled_from(ENCODINGS))
def test_counting_stops_past_the_limit_with_a_true_lower_bound(n_messages: int, words: int,
                                                                limit: int, name: str) -> None:
    conversation = [{"id": f"m{i}", "role": "user", "content": f"word{i} " * words}
                    for i in range(n_messages)]
    state = msgspec.json.encode({"user_input": "hi", "conversation": conversation,
                                 "policy": "be kind"})
    names = ["user_input", "conversation", "policy"]
    n, exact = budget(name).state_tokens(state, names, limit)
    assert n == whole(state, name) if exact else limit < n <= whole(state, name)


@settings(max_examples=40, deadline=None)
@given(unit=st.sampled_from(["a", "\u5b57", "\U0001F600", "ab ", "0"]),
       repeat=st.integers(1, 60_000), limit=st.integers(1, 3_000),
       name=st.sampled_from(ENCODINGS))
def test_dense_text_past_the_limit_has_a_true_lower_bound(unit: str, repeat: int, limit: int,
                                                          name: str) -> None:
    state = msgspec.json.encode({"user_input": "hi", "policy": unit * repeat})
    n, exact = budget(name).state_tokens(state, ["user_input", "policy"], limit)
    assert n == whole(state, name) if exact else limit < n <= whole(state, name)


@pytest.mark.slow
def test_hostile_text_is_rejected_without_counting_it(monkeypatch: pytest.MonkeyPatch) -> None:
    counted: list[int] = []
    b = budget("o200k_base")
    real = b.pieces.count_text
    b.pieces.count_text = lambda t: counted.append(len(t)) or real(t)  # type: ignore[func-returns-value]
    state = msgspec.json.encode({"user_input": "hi", "policy": "\u5b57" * 1_000_000})
    n, exact = b.state_tokens(state, ["user_input", "policy"], 5_000)
    assert not exact and 5_000 < n <= whole(state, "o200k_base")
    assert sum(counted) < 100  # the megabyte was never tokenized


# -- the cache --------------------------------------------------------------------------------
@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(batch=st.lists(st.tuples(states(), st.one_of(st.none(), st.integers(1, 400))),
                      min_size=1, max_size=8),
       name=st.sampled_from(ENCODINGS), entries=st.sampled_from([1, 2, 16]))
def test_the_cache_changes_nothing_but_time(batch: list[tuple[tuple[bytes, list[str]], int | None]],
                                            name: str, entries: int) -> None:
    """The same states, counted with a cold cache, a tiny one, and a warm one that has seen
    them all (in any order): the same figures, exact or at least, every time."""
    cold = [budget(name).state_tokens(s, names, limit) for (s, names), limit in batch]
    tiny = budget(name, entries)
    warm = budget(name)
    for (s, names), _ in reversed(batch):
        warm.state_tokens(s, names)
    assert [tiny.state_tokens(s, names, limit) for (s, names), limit in batch] == cold
    assert [warm.state_tokens(s, names, limit) for (s, names), limit in batch] == cold
    assert len(tiny.pieces) <= entries


def test_a_repeated_field_is_counted_once_across_cases() -> None:
    b = budget("o200k_base")
    counted: list[str] = []
    real = b.pieces.count_text
    b.pieces.count_text = lambda t: counted.append(t) or real(t)  # type: ignore[func-returns-value]
    policy = "Refunds are allowed within 30 days of delivery. " * 400
    for i in range(50):
        state = msgspec.json.encode({"user_input": f"question {i}", "policy": policy})
        n, exact = b.state_tokens(state, ["user_input", "policy"])
        assert exact and n == whole(state, "o200k_base")
    assert sum(policy[:40] in t for t in counted) == 1
    assert b.pieces.hits >= 49 and b.pieces.bytes_hit > 49 * len(policy)


def test_a_piece_below_the_floor_is_counted_without_the_cache() -> None:
    b = budget("o200k_base")
    short, long = b"x" * (tokens.CACHE_MIN - 1), b"y " * tokens.CACHE_MIN
    assert [b.pieces.count(p) for p in (short, short, long, long)] == \
        [whole(short, "o200k_base")] * 2 + [whole(long, "o200k_base")] * 2
    assert len(b.pieces) == 1 and b.pieces.hits == 1 and b.pieces.lookups == 4


def test_the_cache_keeps_its_bound() -> None:
    b = budget("cl100k_base", entries=100)
    for i in range(1_000):
        b.state_tokens(msgspec.json.encode({"user_input": f"q{i}",
                                            "policy": f"p{i} " * tokens.CACHE_MIN}),
                       ["user_input", "policy"])
    assert len(b.pieces) == 100
    assert tokens.piece_counts("o200k_base").entries == tokens.CACHE_ENTRIES == 16_384


def test_the_longest_question_is_counted_exactly() -> None:
    questions = ["short", "a much longer question, with commas, words and ünïcode"]
    for name in ENCODINGS:
        b = tokens.Budget(100, questions, name)
        assert b.question_tokens == [whole(q, name) for q in questions]
        assert b.longest_question == max(b.question_tokens)
        assert b.longest_question_bytes == max(len(q.encode()) for q in questions)
        # The framing and the answer's bound are held back too (issue 25).
        assert b.byte_room == 100 - b.longest_question_bytes - tokens.FRAMING[name] - 1_024
        assert b.limit() == 100 - b.longest_question - tokens.FRAMING[name] - 1_024


def test_the_framing_is_what_the_tokenizer_counts() -> None:
    # Written per encoding so that a budget loads no tokenizer; counted here again.
    assert set(tokens.FRAMING) == set(ENCODINGS)
    for name in ENCODINGS:
        assert tokens.FRAMING[name] == tokens.framing_tokens(name)
        # a pairwise answer's schema (issue 28) is the longer: a set with a pairwise rubric
        assert tokens.PAIR_FRAMING[name] == tokens.framing_tokens(name, pairwise=True)
        assert tokens.PAIR_FRAMING[name] > tokens.FRAMING[name]
        assert tokens.Budget(100, ["q"], name, pairwise=True).reserved.framing == \
            tokens.PAIR_FRAMING[name]


def test_a_run_that_counts_every_state_says_how_much_it_will_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``stats`` and ``build --exact-tokens`` pass their input's size, so the tokenizer can
    load its fast counter at once (``Tokenizer.expect``); a budget that counts only the
    states over the byte bound says nothing (it may never count at all)."""
    told: list[int] = []
    monkeypatch.setattr(encodings.Tokenizer, "expect", lambda self, n: told.append(n))
    tokens.Budget(32_000, ["q"], exact=False, volume=1 << 30)
    tokens.Budget(32_000, ["q"], exact=True)
    assert told == []
    tokens.Budget(32_000, ["q"], exact=True, volume=1 << 30)
    assert told == [1 << 30]
