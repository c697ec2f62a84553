"""``fits``: convert's check of a case dict in place of decoding the line it wrote.

The property: every case ``fits`` passes is one the case decoder accepts, without a repeated
item id, with the same id. The cases it refuses are decoded by the run as before, so their
rejects keep the decoder's sentences (the last tests here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstream._cases import schema
from evalstream._cases.rejects import explain
from evalstream._convert.fits import fits
from tests.convert.support import convert

CAP = schema.MAX_TEXT_CHARS
# Short text, and the values at and past every cap the decoder holds.
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6) | st.sampled_from(
    ["", " ", "a b", "a/b", "a\n", "\u2028", "x" * CAP, "x" * (CAP + 1), "\U0001f600" * CAP,
     "\U0001f600" * (CAP + 1), "i" * 512, "i" * 513])
SCALAR = (st.none() | st.booleans() | st.integers() | st.floats()
          | st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1]) | TEXT)
ANY = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3)
                   | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8)
WORDS = st.sampled_from(["pass", "fail", "na", "human", "synthetic", "imported", "user",
                         "assistant", "system", "tool", "PASS", ""])
ID = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=4) | TEXT
ITEM_ID = st.sampled_from(["c1", "c2", "m1"]) | ID
PLAIN = st.recursive(SCALAR, lambda inner: st.dictionaries(TEXT, inner, max_size=3),
                     max_leaves=6)
# Cases much as tables make them, with values at and past the caps; then, in some, one
# field or one item's field replaced by any JSON value.
CASE = st.fixed_dictionaries(
    {"id": ID, "input": TEXT, "output": TEXT},
    optional={"policy": TEXT,
              "context": st.lists(st.fixed_dictionaries({"id": ITEM_ID, "text": TEXT}),
                                  max_size=4),
              "messages": st.lists(st.fixed_dictionaries(
                  {"id": ITEM_ID, "role": WORDS, "content": TEXT}), max_size=4),
              "metadata": st.dictionaries(TEXT, PLAIN, max_size=3),
              "expected": st.dictionaries(ID, st.fixed_dictionaries(
                  {"status": WORDS, "source": WORDS}), max_size=2)})
FIELDS = st.sampled_from(["id", "input", "output", "policy", "context", "messages",
                          "metadata", "expected", "toolEvents", "other"])


def _mutated(case: dict[str, Any], change: tuple[str, str | None, Any] | None
             ) -> dict[str, Any]:
    """``case`` with one field, or a field of its first item or label, set to a value (or
    removed: ``DROP``)."""
    if change is None:
        return case
    name, inner, value = change
    target = case
    if inner is not None:
        held = case.get(name)
        if isinstance(held, list) and held and isinstance(held[0], dict):
            target = held[0]
        elif isinstance(held, dict) and held and isinstance(next(iter(held.values())), dict):
            target = next(iter(held.values()))
        else:
            return case
        name = inner
    if value is DROP:
        target.pop(name, None)
    else:
        target[name] = value
    return case


DROP = object()
CHANGE = st.none() | st.tuples(FIELDS, st.none() | st.sampled_from(
    ["id", "text", "role", "content", "status", "source", "extra"]), ANY | st.just(DROP))


@pytest.mark.slow
@settings(max_examples=1000, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(CASE, CHANGE)
def test_every_case_fits_passes_is_one_the_case_decoder_accepts(
        case: dict[str, Any], change: tuple[str, str | None, Any] | None) -> None:
    case = _mutated(case, change)
    try:
        data = msgspec.json.encode(case)
    except (msgspec.EncodeError, OverflowError, TypeError):
        return  # convert rejects a row it cannot encode before asking
    if fits(case):
        decoded = schema.decoder().decode(data)
        assert schema.duplicate_item_id(decoded) is None
        assert schema.long_nested_text(decoded) is None  # validate's cap at any depth
        assert decoded.id == case["id"]


def test_the_cases_a_table_makes_fit() -> None:
    # What the run takes from fits (else every row would be decoded, as before): text,
    # passages, messages, metadata of plain values nested, labels, at their caps.
    assert fits({"id": "r-1", "input": "q", "output": "a", "policy": "p"})
    assert fits({"id": "r" * 512, "input": "x" * CAP, "output": "\U0001f600" * CAP,
                 "context": [{"id": "c1", "text": "t"}, {"id": "c2", "text": ""}],
                 "messages": [{"id": "m1", "role": "user", "content": "hi"}],
                 "metadata": {"a": {"b": 1, "c": None, "d": 0.5, "e": True}, "f": "x"},
                 "expected": {"support": {"status": "pass", "source": "human"}}})
    assert fits({"id": "r", "input": "", "output": "",
                 "context": [{"id": f"c{i}", "text": "t"} for i in range(schema.MAX_ITEMS)]})


@pytest.mark.parametrize("case", [
    {"id": "r", "input": "q"},  # no output
    {"id": "a b", "input": "q", "output": "a"},
    {"id": "r" * 513, "input": "q", "output": "a"},
    {"id": 1, "input": "q", "output": "a"},
    {"id": "r", "input": "x" * (CAP + 1), "output": "a"},
    {"id": "r", "input": "q", "output": "a", "policy": None},
    {"id": "r", "input": "q", "output": "a",
     "context": [{"id": "c1", "text": "t"}, {"id": "c1", "text": "u"}]},
    {"id": "r", "input": "q", "output": "a", "context": [{"id": "", "text": "t"}]},
    {"id": "r", "input": "q", "output": "a",
     "context": [{"id": "c1", "text": "t"}] * (schema.MAX_ITEMS + 1)},
    {"id": "r", "input": "q", "output": "a",
     "messages": [{"id": "m1", "role": "robot", "content": "hi"}]},
    {"id": "r", "input": "q", "output": "a", "metadata": {"big": 2**64}},
    {"id": "r", "input": "q", "output": "a", "metadata": {"list": [1]}},
    {"id": "r", "input": "q", "output": "a", "metadata": {"a": {"b": "x" * (CAP + 1)}}},
    {"id": "r", "input": "q", "output": "a", "metadata": {"x" * (CAP + 1): 1}},
    {"id": "r", "input": "q", "output": "a",
     "expected": {"support": {"status": "yes", "source": "human"}}},
    {"id": "r", "input": "q", "output": "a",
     "expected": {"a b": {"status": "pass", "source": "human"}}},
    {"id": "r", "input": "q", "output": "a", "toolEvents": []},
    {"id": "r", "input": "q", "output": "a", "other": 1},
])
def test_what_fits_refuses_is_left_to_the_decoder(case: dict[str, Any]) -> None:
    assert not fits(case)


def test_rows_the_decoder_refuses_are_rejected_with_its_sentences(tmp_path: Path) -> None:
    # Each bad row is rejected with the sentence the case decoder gives its case, naming
    # the column and the field, as when every line was decoded.
    long = "x" * (CAP + 1)
    src = tmp_path / "t.csv"
    src.write_text(f"id,q,a,l\nr1,q,a,1\nr2,{long},a,1\nr/3,q,a,1\nr4,q,a,2\n")
    result = convert(tmp_path, src, maps=["input=q,output=a,expected.support.status=l"],
                     sets=["expected.support.source=human"],
                     values=["expected.support.status=1:pass,2:maybe"], id_from="id")
    assert result.report.counts.cases == 1
    bad = {2: ({"id": "r2", "input": long, "output": "a"}, "q", "$.input"),
           3: ({"id": "r/3", "input": "q", "output": "a"}, "id", "$.id"),
           4: ({"id": "r4", "input": "q", "output": "a",
                "expected": {"support": {"status": "maybe", "source": "human"}}},
               "l", '$.expected["support"].status')}
    assert [r["row"] for r in result.rejects] == list(bad)
    for reject in result.rejects:
        case, column, path = bad[reject["row"]]
        data = msgspec.json.encode(case)
        with pytest.raises(msgspec.ValidationError) as caught:
            schema.decoder().decode(data)
        assert (reject["column"], reject["path"]) == (column, path)
        assert reject["error"] == explain(caught.value, data)[1]


def test_a_metadata_text_over_the_cap_is_rejected_as_validate_would(tmp_path: Path) -> None:
    # validate refuses a string over the text cap at any depth of the free-form values
    # (schema.long_nested_text); convert wrote such a case, which validate then rejected.
    long = "x" * (CAP + 1)
    src = tmp_path / "t.csv"
    src.write_text(f"id,q,a,m\nr1,q,a,{long}\nr2,q,a,short\n")
    result = convert(tmp_path, src, maps=["input=q,output=a,metadata.m=m"], id_from="id")
    assert result.report.counts.cases == 1
    [reject] = result.rejects
    assert (reject["row"], reject["column"], reject["path"]) == (1, "m", "$.metadata.m")
    assert reject["error"] == (f"`$.metadata.m` is {CAP + 1:,} characters long; text fields "
                               f"allow at most {CAP:,} characters, at any depth.")
