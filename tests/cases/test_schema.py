"""The case schema: caps at exactly the limit and one over (in characters), ids, enums, nulls."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstream._cases import schema
from evalstream._cases.rejects import explain

STRICT = schema.decoder(False)
LENIENT = schema.decoder(True)


def case(**fields: Any) -> bytes:
    base: dict[str, Any] = {"id": "c1", "input": "hi", "output": "hello"}
    base.update(fields)
    return json.dumps(base, ensure_ascii=False).encode()


def error_of(line: bytes) -> tuple[str | None, str]:
    with pytest.raises((msgspec.DecodeError, RecursionError)) as info:
        STRICT.decode(line)
    return explain(info.value, line)


EMOJI = "\U0001F600"  # 4 bytes in UTF-8, 1 character, 2 UTF-16 units


@pytest.mark.parametrize("field", ["input", "output", "policy"])
def test_text_cap_counts_characters_not_bytes(field: str) -> None:
    at_limit = EMOJI * schema.MAX_TEXT_CHARS  # 800,000 bytes, 200,000 characters
    assert getattr(STRICT.decode(case(**{field: at_limit})), field) == at_limit
    path, error = error_of(case(**{field: at_limit + "x"}))
    assert path == f"$.{field}"
    assert error == (f"`$.{field}` is 200,001 characters long; text fields allow at most "
                     "200,000 characters.")


@pytest.mark.parametrize(("field", "path", "make"), [
    ("messages", "$.messages[1].content",
     lambda text: [{"id": "m1", "role": "user", "content": "a"},
                   {"id": "m2", "role": "assistant", "content": text}]),
    ("context", "$.context[0].text", lambda text: [{"id": "c1", "text": text}]),
    ("toolEvents", "$.toolEvents[0].output",
     lambda text: [{"id": "t1", "name": "x", "status": "success", "output": text}]),
    ("toolEvents", "$.toolEvents[0].error",
     lambda text: [{"id": "t1", "name": "x", "status": "failure", "error": text}]),
])
def test_nested_text_caps(field: str, path: str, make: Any) -> None:
    STRICT.decode(case(**{field: make("é" * schema.MAX_TEXT_CHARS)}))
    got_path, error = error_of(case(**{field: make("é" * (schema.MAX_TEXT_CHARS + 1))}))
    assert got_path == path
    assert "200,001 characters" in error


@pytest.mark.parametrize("field", ["messages", "context", "toolEvents"])
def test_item_caps(field: str) -> None:
    def items(n: int) -> list[dict[str, str]]:
        if field == "messages":
            return [{"id": f"m{i}", "role": "user", "content": "x"} for i in range(n)]
        if field == "context":
            return [{"id": f"c{i}", "text": "x"} for i in range(n)]
        return [{"id": f"t{i}", "name": "n", "status": "success"} for i in range(n)]

    STRICT.decode(case(**{field: items(500)}))
    path, error = error_of(case(**{field: items(501)}))
    assert path == f"$.{field}"
    assert error == f"`$.{field}` has 501 items; at most 500 are allowed."


LABEL = {"status": "pass", "source": "human"}
RULE = "rubric ids must be non-empty, at most 512 characters, without whitespace or `/`."


def test_expected_has_at_most_500_labels() -> None:
    labels = {f"r{i}": LABEL for i in range(501)}
    assert len(STRICT.decode(case(expected=dict(list(labels.items())[:500]))).expected) == 500
    assert error_of(case(expected=labels)) == (
        "$.expected", "`$.expected` has 501 items; at most 500 are allowed.")
    assert LENIENT.decode(case(expected={f"r{i}": {**LABEL, "x": 1} for i in range(500)}))
    with pytest.raises(msgspec.ValidationError):
        LENIENT.decode(case(expected=labels))


@pytest.mark.parametrize(("key", "path", "message"), [
    ("a b", '$.expected["a b"]', f"`$.expected` has the rubric id 'a b' (a key), which is "
                                 f"not a slug: {RULE}"),
    ("a/b", '$.expected["a/b"]', "has the rubric id 'a/b' (a key), which is not a slug"),
    ("", '$.expected[""]', f"`$.expected` has an empty rubric id (a key); {RULE}"),
    ("r" * 513, "$.expected", f"`$.expected` has a rubric id (a key) of 513 characters "
                              f"('{'r' * 40}'...); {RULE}"),
])
def test_label_keys_follow_the_rubric_id_rule(key: str, path: str, message: str) -> None:
    assert STRICT.decode(case(expected={"r" * 512: LABEL, "ok.rubric-1": LABEL})).expected
    line = case(expected={"fine": LABEL, key: LABEL})
    got_path, error = error_of(line)
    assert got_path == path
    assert message in error
    with pytest.raises(msgspec.ValidationError):
        LENIENT.decode(line)


@pytest.mark.parametrize("good", ["a", "x" * 512, "taubench.airline.task-0.trial-0", "ünï-çødé",
                                  "case:17#b"])
def test_valid_ids(good: str) -> None:
    assert STRICT.decode(case(id=good)).id == good


@pytest.mark.parametrize(("bad", "message"), [
    ("", "The id at `$.id` is empty; ids must be non-empty."),
    ("x" * 513, "The id at `$.id` is 513 characters; ids allow at most 512."),
    ("case 12", "Case id 'case 12' is not a slug"),
    ("a/b", "Case id 'a/b' is not a slug"),
    ("tab\there", "is not a slug"),
])
def test_invalid_ids(bad: str, message: str) -> None:
    path, error = error_of(case(id=bad))
    assert path == "$.id"
    assert message in error


@pytest.mark.parametrize(("fields", "path", "allowed"), [
    ({"messages": [{"id": "m", "role": "bot", "content": ""}]}, "$.messages[0].role",
     "system, user, assistant, tool"),
    ({"toolEvents": [{"id": "t", "name": "n", "status": "ok"}]}, "$.toolEvents[0].status",
     "success, failure"),
    ({"expected": {"r-1": {"status": "passed", "source": "human"}}},
     '$.expected["r-1"].status', "pass, fail, na"),
    ({"expected": {"r-1": {"status": "pass", "source": "crowd"}}},
     '$.expected["r-1"].source', "synthetic, human, imported"),
])
def test_enums_name_the_allowed_values(fields: dict[str, Any], path: str, allowed: str) -> None:
    got_path, error = error_of(case(**fields))
    assert got_path == path
    assert error.endswith(f"allowed values are: {allowed}.")


def test_null_optional_fields_mean_absent() -> None:
    c = STRICT.decode(case(messages=None, context=None, policy=None, toolEvents=None,
                           metadata=None, expected=None))
    assert (c.messages, c.context, c.policy, c.tool_events, c.metadata, c.expected) == (None,) * 6


@pytest.mark.parametrize(("field", "wording"), [
    ("id", "`$.id` is null, but it is required and must be a string."),
    ("input", "`$.input` is null, but it is required and must be a string."),
])
def test_null_required_fields(field: str, wording: str) -> None:
    assert error_of(case(**{field: None})) == (f"$.{field}", wording)


@pytest.mark.parametrize(("field", "parent", "near"), [
    ("tool_events", "the case", "toolEvents"),
    ("Input", "the case", "input"),
    ("meta_data", "the case", "metadata"),
])
def test_unknown_fields_suggest_the_nearest_name(field: str, parent: str, near: str) -> None:
    path, error = error_of(case(**{field: []}))
    assert path == f"$.{field}"
    assert error.startswith(f"Unknown field `{field}` in {parent}. Did you mean `{near}`?")
    assert error.endswith("Use --allow-unknown-fields to ignore unknown fields.")


def test_unknown_nested_field_lists_the_known_ones() -> None:
    line = case(toolEvents=[{"id": "t", "name": "n", "status": "success", "result": 1}])
    path, error = error_of(line)
    assert path == "$.toolEvents[0].result"
    assert "Known fields: `id`, `name`, `status`, `input`, `output`, `error`." in error


def test_allow_unknown_fields_ignores_them_everywhere() -> None:
    line = case(extra=1, messages=[{"id": "m", "role": "user", "content": "x", "ts": 3}],
                expected={"r": {"status": "pass", "source": "human", "by": "me"}})
    c = LENIENT.decode(line)
    assert c.messages[0].content == "x"
    assert c.expected["r"].status == "pass"


def test_tool_values_take_any_json() -> None:
    events = [{"id": f"t{i}", "name": "n", "status": "success", "input": value, "output": value}
              for i, value in enumerate([{"a": [1, 2.5, None]}, "s", 3, 2.5, True, [1, "x"]])]
    c = STRICT.decode(case(toolEvents=events))
    assert [e.input for e in c.tool_events] == [e["input"] for e in events]


def test_duplicate_item_ids_are_found() -> None:
    c = STRICT.decode(case(context=[{"id": "c1", "text": "a"}, {"id": "c2", "text": "b"},
                                    {"id": "c1", "text": "c"}]))
    assert schema.duplicate_item_id(c) == ("$.context[2].id", "c1")
    ok = STRICT.decode(case(messages=[{"id": "c1", "role": "user", "content": "a"}],
                            context=[{"id": "c1", "text": "a"}]))
    assert schema.duplicate_item_id(ok) is None  # unique within each list, not across lists


@pytest.mark.parametrize("repeated", ["messages", "context", "toolEvents"])
def test_each_list_names_its_own_repeated_id(repeated: str) -> None:
    # Each list is tested on its own (duplicate_item_id is unrolled for speed): each names
    # its own path, and a repeat in an earlier list is named before one in a later list.
    items = {"messages": [{"id": "x", "role": "user", "content": "a"}],
             "context": [{"id": "x", "text": "a"}],
             "toolEvents": [{"id": "x", "name": "n", "status": "success"}]}
    lists = {name: value * (2 if name == repeated else 1) for name, value in items.items()}
    assert schema.duplicate_item_id(STRICT.decode(case(**lists))) == (f"$.{repeated}[1].id", "x")
    every = {name: value * 2 for name, value in items.items()}
    first = next(iter(items))
    assert schema.duplicate_item_id(STRICT.decode(case(**every))) == (f"$.{first}[1].id", "x")


def test_id_with_a_final_newline_is_rejected() -> None:
    # `$` in a regex matches before a final newline; the id rule must not.
    path, error = error_of(case(id="abc\n"))
    assert path == "$.id" and "is not a slug" in error


# -- strings nested in free-form values (tool input/output, metadata) ---------------------------
def _reference_long(value: Any, path: str, limit: int) -> tuple[str, int, bool] | None:
    """The first over-long string or key, by plain recursion over the stdlib's reading."""
    if isinstance(value, str):
        return (path, len(value), False) if len(value) > limit else None
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _reference_long(item, f"{path}[{i}]", limit)
            if found:
                return found
    if isinstance(value, dict):
        for key, item in value.items():
            if len(key) > limit:
                return path, len(key), True
            plain = key[:1].isascii() and (key[:1].isalpha() or key[:1] == "_") and all(
                c.isascii() and (c.isalnum() or c == "_") for c in key)
            child = f"{path}.{key}" if plain else f"{path}[{json.dumps(key, ensure_ascii=False)}]"
            found = _reference_long(item, child, limit)
            if found:
                return found
    return None


_text = st.text(alphabet=st.sampled_from("ab é.\"\\\u2028"), max_size=6)
_json = st.recursive(st.none() | st.booleans() | st.integers() | _text,
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_text, inner, max_size=3), max_leaves=12)


@pytest.mark.slow
@given(st.lists(st.tuples(_json, _json), max_size=3), st.none() | st.dictionaries(_text, _json))
def test_nested_text_is_found_as_an_independent_walk_finds_it(
        events: list[tuple[Any, Any]], metadata: Any) -> None:
    line = case(toolEvents=[{"id": f"t{i}", "name": "n", "status": "success", "input": a,
                             "output": b} for i, (a, b) in enumerate(events)],
                metadata=metadata)
    decoded = STRICT.decode(line)
    loaded = json.loads(line)
    expected = None
    for i, event in enumerate(loaded["toolEvents"]):
        for name in ("input", "output"):
            if expected is None and isinstance(event[name], (dict, list)):
                expected = _reference_long(event[name], f"$.toolEvents[{i}].{name}", 4)
    if expected is None and loaded["metadata"]:
        expected = _reference_long(loaded["metadata"], "$.metadata", 4)
    assert schema.long_nested_text(decoded, limit=4) == expected


@pytest.mark.parametrize(("field", "value", "path"), [
    ("metadata", {"a": {"b c": ["x", "{long}"]}}, '$.metadata.a["b c"][1]'),
    ("metadata", {"{long}": 1}, "$.metadata"),
    ("toolEvents", [{"id": "t", "name": "n", "status": "success", "input": {"q": "{long}"}}],
     "$.toolEvents[0].input.q"),
    ("toolEvents", [{"id": "t", "name": "n", "status": "success", "output": [["{long}"]]}],
     "$.toolEvents[0].output[0][0]"),
])
def test_nested_text_over_the_cap_is_rejected_with_its_path(field: str, value: Any,
                                                            path: str) -> None:
    from evalstream._cases.reading import read_cases

    def filled(n: int) -> Any:
        return json.loads(json.dumps(value).replace("{long}", "é" * n))

    at_cap = case(**{field: filled(schema.MAX_TEXT_CHARS)})
    over = case(**{field: filled(schema.MAX_TEXT_CHARS + 1)})
    results = list(read_cases([at_cap, over.replace(b'"c1"', b'"c2"')]))
    assert isinstance(results[0], schema.Case)
    reject = results[1]
    assert not isinstance(reject, schema.Case)
    assert (reject.line, reject.id, reject.path) == (2, "c2", path)
    assert reject.error.startswith(f"`{path}` ")
    assert "200,001 characters" in reject.error and "at most 200,000" in reject.error
