"""NaN, Infinity and -Infinity in JSON text (inspect_ai writes NaN for an unscored score):
rewritten outside strings only, however the text is cut into blocks, and read back as the
standard library's json reads them (the oracle)."""

from __future__ import annotations

import io
import json
import math
from typing import Any

import ijson
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream._convert import nonfinite

NUMBERS = st.sampled_from([math.nan, math.inf, -math.inf, 0.5, -0.0, 1e300, 7])
# Text that looks like the literals, inside strings (and keys): never rewritten.
TEXTS = st.sampled_from(["NaN", "Infinity", "-Infinity", '"NaN"', "a\\", "\\", '\\"NaN', "x: NaN,",
                         "\u0000NaN", "\u2028", ""]) | st.text(max_size=8)
VALUES = st.recursive(st.none() | st.booleans() | NUMBERS | TEXTS,
                      lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(TEXTS, inner, max_size=4), max_leaves=25)


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN (the oracle's reading has floats where the text had literals)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@pytest.mark.slow
@settings(max_examples=300)
@given(VALUES, st.integers(0, 10), st.booleans())
def test_rewritten_text_reads_as_the_standard_library_reads_it(value: Any, seed: int,
                                                               indent: bool) -> None:
    text = json.dumps(value, indent=2 if indent else None, ensure_ascii=seed % 2 == 0).encode()
    if _strings(value) & MARKERS:
        return  # a marker itself as text: documented to read as the number
    oracle = json.loads(text)
    rewritten, count = nonfinite.rewrite(text)
    assert count == text.count(b"NaN") + text.count(b"Infinity") - _inside_strings(value)
    assert _same(nonfinite.restore(msgspec.json.decode(rewritten)), oracle)


MARKERS = {"\x00NaN", "\x00Infinity", "\x00-Infinity"}


def _strings(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, list):
        return set().union(*map(_strings, value)) if value else set()
    if isinstance(value, dict):
        return set(value) | (set().union(*map(_strings, value.values())) if value else set())
    return set()


def _inside_strings(value: Any) -> int:
    """Literal spellings inside strings and keys (as json.dumps writes them)."""
    if isinstance(value, str):
        text = json.dumps(value)
        return text.count("NaN") + text.count("Infinity")
    if isinstance(value, list):
        return sum(_inside_strings(v) for v in value)
    if isinstance(value, dict):
        return sum(_inside_strings(k) + _inside_strings(v) for k, v in value.items())
    return 0


@pytest.mark.slow
@settings(max_examples=300)
@given(VALUES, st.lists(st.integers(1, 7), min_size=1, max_size=20))
def test_any_cut_into_blocks_gives_the_same_text(value: Any, sizes: list[int]) -> None:
    text = json.dumps({"samples": [value, {"value": math.nan}]}).encode()
    whole, _ = nonfinite.rewrite(text)
    rewriter, parts, at = nonfinite.Rewriter(), [], 0
    for i in range(10_000):
        block = text[at:at + sizes[i % len(sizes)]]
        at += len(block)
        parts.append(rewriter.feed(block, final=not block))
        if not block:
            break
    assert b"".join(parts) == whole


@pytest.mark.parametrize("block", [1, 2, 3, 5, 64])
def test_ijson_reads_the_rewritten_stream(block: int) -> None:
    text = b'{"a": [NaN, -Infinity, "NaN \\" Infinity", Infinity], "NaN": {"b": NaN}}'
    stream = io.BufferedReader(nonfinite.RewrittenStream(io.BytesIO(text), block))
    [value] = list(ijson.items(stream, "", use_float=True))
    assert _same(nonfinite.restore(value), json.loads(text))


def test_only_text_holding_a_literal_is_rewritten() -> None:
    assert nonfinite.rewrite(b'{"a": 1}') == (b'{"a": 1}', 0)
    assert nonfinite.spelled(math.nan) == "NaN" and nonfinite.spelled(-math.inf) == "-Infinity"
    assert not nonfinite.is_nonfinite(True) and not nonfinite.is_nonfinite(1)


def test_a_position_in_the_rewritten_text_is_said_in_the_original() -> None:
    text = b'{"a": [NaN, -Infinity, Infinity], "b": "NaN", "c": tru}'
    # The oracle: the same text with each literal a number of its length, read by msgspec.
    same = text.replace(b"-Infinity", b"-1.000000").replace(b" Infinity", b" 1.000000") \
        .replace(b"[NaN", b"[0.0")
    assert len(same) == len(text)
    with pytest.raises(msgspec.DecodeError) as oracle:
        msgspec.json.decode(same)
    rewritten, count = nonfinite.rewrite(text)
    assert count == 3
    with pytest.raises(msgspec.DecodeError) as info:
        msgspec.json.decode(rewritten)
    assert str(info.value) != str(oracle.value)
    assert nonfinite.in_original(str(info.value), rewritten) == str(oracle.value)
