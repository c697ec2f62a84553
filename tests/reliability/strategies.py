"""Hypothesis strategies: valid cases of every shape, and the damage done to them.

A generated case is a plain dict in the wire format (camelCase), so the tests can compare
what evalstream wrote with what the line said, using only the standard library.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import strategies as st

from evalstream._cases import schema

# Every plane, NUL and other control characters included; only lone surrogates are left
# out, because they cannot be valid UTF-8 (the mutations put them back as escapes).
CHARS = st.characters(exclude_categories=("Cs",))
TEXT = st.text(CHARS, max_size=40)
SLUG = re.compile(schema.ID_PATTERN)
# Python's \s (msgspec checks the pattern with `re`): Unicode spaces and the ASCII separators.
_SLUG_CHARS = st.characters(exclude_categories=("Cs", "Zs", "Zl", "Zp"),
                            exclude_characters="/\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85")
CASE_ID = st.text(_SLUG_CHARS, min_size=1, max_size=24).filter(
    lambda s: SLUG.match(s) is not None)
ITEM_ID = st.text(CHARS, min_size=1, max_size=12)
INT64 = st.integers(-(2**63), 2**64 - 1)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | INT64 | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12)
ROLES = ("system", "user", "assistant", "tool")
LABELS = st.fixed_dictionaries({"status": st.sampled_from(("pass", "fail", "na")),
                                "source": st.sampled_from(("synthetic", "human", "imported"))})


def _items(item: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.lists(item, max_size=4, unique_by=lambda x: x["id"])


MESSAGE = st.fixed_dictionaries({"id": ITEM_ID, "role": st.sampled_from(ROLES), "content": TEXT})
PASSAGE = st.fixed_dictionaries({"id": ITEM_ID, "text": TEXT})
TOOL_EVENT = st.fixed_dictionaries(
    {"id": ITEM_ID, "name": TEXT, "status": st.sampled_from(("success", "failure"))},
    optional={"input": JSON_VALUE, "output": JSON_VALUE, "error": st.none() | TEXT})
OPTIONAL = {
    "messages": st.none() | _items(MESSAGE),
    "context": st.none() | _items(PASSAGE),
    "policy": st.none() | TEXT,
    "toolEvents": st.none() | _items(TOOL_EVENT),
    "metadata": st.none() | st.dictionaries(TEXT, JSON_VALUE, max_size=4),
    "expected": st.none() | st.dictionaries(CASE_ID, LABELS, max_size=3),  # keys: rubric ids
}


def cases(text: st.SearchStrategy[str] = TEXT) -> st.SearchStrategy[dict[str, Any]]:
    """Valid cases; every optional field may be absent, null or present."""
    return st.fixed_dictionaries({"id": CASE_ID, "input": text, "output": text},
                                 optional=OPTIONAL)


def dumps(case: dict[str, Any], ascii_only: bool = False) -> bytes:
    """One compact JSON line, non-ASCII written raw (or as escapes)."""
    return json.dumps(case, ensure_ascii=ascii_only, separators=(",", ":")).encode()


def unique_ids(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cases with ids made unique (the line's position is put in front)."""
    return [dict(c, id=f"{i}-{c['id']}") for i, c in enumerate(batch)]


# -- damage ---------------------------------------------------------------------------------
def _set(case: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(case))
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


WRONG_TYPES = st.sampled_from([1, 1.5, True, [], {}, ["x"], {"a": 1}])


@st.composite
def type_damage(draw: st.DrawFn, case: dict[str, Any]) -> tuple[bytes, str]:
    """A case with one typed field given a value of the wrong type, and the field's path."""
    spots: list[tuple[tuple[Any, ...], str, type | tuple[type, ...]]] = [
        (("id",), "$.id", str), (("input",), "$.input", str), (("output",), "$.output", str)]
    for i, _ in enumerate(case.get("messages") or []):
        spots += [(("messages", i, "role"), f"$.messages[{i}].role", str),
                  (("messages", i, "content"), f"$.messages[{i}].content", str)]
    for i, _ in enumerate(case.get("toolEvents") or []):
        spots.append((("toolEvents", i, "status"), f"$.toolEvents[{i}].status", str))
    path, json_path, kind = draw(st.sampled_from(spots))
    value = draw(WRONG_TYPES.filter(lambda v: not isinstance(v, kind)))
    return dumps(_set(case, path, value)), json_path


ENUM_DAMAGE = st.sampled_from(["", "USER", "bot", "passed", "ok", "Success", "nä"])


@st.composite
def enum_damage(draw: st.DrawFn, case: dict[str, Any]) -> tuple[bytes, str]:
    """A case with one enum field (role, status, label status or source) out of its set."""
    case = dict(case)
    if not case.get("messages"):
        case["messages"] = [{"id": "m", "role": "user", "content": "hi"}]
    if not case.get("expected"):
        case["expected"] = {"r": {"status": "pass", "source": "human"}}
    rubric = next(iter(case["expected"]))
    spots = [(("messages", 0, "role"), "$.messages[0].role"),
             (("expected", rubric, "status"),
              f"$.expected[{json.dumps(rubric, ensure_ascii=False)}].status"),
             (("expected", rubric, "source"),
              f"$.expected[{json.dumps(rubric, ensure_ascii=False)}].source")]
    path, json_path = draw(st.sampled_from(spots))
    return dumps(_set(case, path, draw(ENUM_DAMAGE))), json_path


def over_cap(case: dict[str, Any], field: str, char: str, extra: int) -> bytes:
    """The case with a text field of exactly MAX_TEXT_CHARS + ``extra`` copies of ``char``."""
    return dumps(dict(case, **{field: char * (schema.MAX_TEXT_CHARS + extra)}))
