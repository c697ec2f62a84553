"""OpenAI chat transcripts: content parts, tool calls, failed tools, developer role, null
content, ids generated, and rows that cannot become cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstream._convert.chat import parse_failure_rules, tool_failure
from evalstream.errors import UsageError
from tests.convert.support import convert, golden_run, validate_accepts

WEATHER = {
    "messages": [
        {"role": "developer", "content": "Answer briefly. Use tools for facts."},
        {"role": "user", "content": [
            {"type": "text", "text": "What's the weather where this photo was taken?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/p.jpg"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "locate_photo", "arguments": "{\"url\": \"https://example.com/p.jpg\"}"}},
            {"id": "call_2", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"city\": \"Paris\"}"},
        {"role": "tool", "tool_call_id": "call_2",
         "content": "{\"error\": \"weather service unavailable\", \"code\": 503}"},
        {"role": "assistant", "content": "It is sunny in Paris, 24 degrees."},
    ],
    "metadata": {"scenario": "weather", "split": "dev"},
    "tools": [{"type": "function", "function": {"name": "get_weather"}}],
}
AUDIO = {"messages": [
    {"id": "sys", "role": "system", "content": "You transcribe."},
    {"id": "u1", "role": "user", "content": [
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "file", "file": {"filename": "notes.pdf", "file_data": "JVBERi0="}},
        {"type": "text", "text": "Summarise both."}]},
    {"id": "a1", "role": "assistant", "content": [{"type": "refusal", "refusal": "I cannot open PDFs."}]},
]}
NO_ANSWER = {"messages": [{"role": "user", "content": "hello?"}]}
UNANSWERED_TOOL = {"messages": [
    {"role": "user", "content": "Book it."},
    {"role": "assistant", "content": "Booking.", "tool_calls": [
        {"id": "call_9", "type": "function", "function": {"name": "book", "arguments": "{}"}}]},
    {"role": "assistant", "content": "Done!"}]}
BAD_ROLE = {"messages": [{"role": "narrator", "content": "Once"}, {"role": "assistant", "content": "x"}]}
NUMBER_CONTENT = {"messages": [{"role": "user", "content": 5}, {"role": "assistant", "content": "x"}]}


def _lines(tmp_path: Path, rows: list[object]) -> Path:
    path = tmp_path / "chats.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_golden(tmp_path: Path) -> None:
    src = _lines(tmp_path, [WEATHER, AUDIO, "", NO_ANSWER, UNANSWERED_TOOL, BAD_ROLE,
                            NUMBER_CONTENT, "[1, 2]", '{"messages": [', WEATHER])
    result = convert(tmp_path, src)
    golden_run("openai_chat", result)
    validate_accepts(result.out)
    assert result.report.format == "openai-chat" and result.report.inferred is not None
    assert result.report.exit_code == 1
    assert [r["row"] for r in result.rejects] == [4, 5, 6, 7, 8, 9, 10]
    assert result.rejects[-1]["error"].startswith("Case id ")  # the same transcript twice


def test_mapping_rules(tmp_path: Path) -> None:
    [case, audio] = convert(tmp_path, _lines(tmp_path, [WEATHER, AUDIO])).cases
    assert case["input"] == ("What's the weather where this photo was taken?\n"
                             "[image: https://example.com/p.jpg]\n[image: image/png, 12 bytes of base64]")
    assert case["output"] == "It is sunny in Paris, 24 degrees."
    assert [m["role"] for m in case["messages"]] == ["system", "user", "assistant", "tool", "tool",
                                                     "assistant"]
    assert [m["id"] for m in case["messages"]] == ["m1", "m2", "m3", "m4", "m5", "m6"]
    assert case["messages"][2]["content"] == (
        '[tool call] locate_photo {"url": "https://example.com/p.jpg"}\n'
        '[tool call] get_weather {"city": "Paris"}')
    first, second = case["toolEvents"]
    assert first == {"id": "call_1", "name": "locate_photo", "status": "success",
                     "input": {"url": "https://example.com/p.jpg"}, "output": {"city": "Paris"}}
    assert second["status"] == "failure" and second["error"] == "weather service unavailable"
    assert case["metadata"] == {"scenario": "weather", "split": "dev", "tools": WEATHER["tools"]}
    assert [m["id"] for m in audio["messages"]] == ["sys", "u1", "a1"]
    assert audio["input"] == "[audio: wav, 8 bytes of base64]\n[file: notes.pdf]\nSummarise both."
    assert audio["output"] == "I cannot open PDFs."


def test_report_counts_what_conversion_did(tmp_path: Path) -> None:
    report = convert(tmp_path, _lines(tmp_path, [WEATHER, AUDIO])).report
    assert report.placeholders == {"audio": 1, "file": 1, "image": 2}
    assert report.tool_events == {"failure": 1, "success": 1}
    assert report.roles_renamed == {"developer -> system": 1}
    assert report.generated_ids == {"cases": 2, "messages": 6}  # neither line has an `id`
    assert report.ids == ("the row's own `id` where it is a valid id, else xxh3-128 of its "
                          "canonical JSON")


# -- a line's own id (issue 30: it was filed under metadata.id, the case id a hash) --------------
def _chat(own: object = None, text: str = "hi", **keys: object) -> dict[str, object]:
    line: dict[str, object] = {"messages": [{"role": "user", "content": text},
                                            {"role": "assistant", "content": "hello"}], **keys}
    if own is not None:
        line["id"] = own
    return line


def test_a_lines_own_id_is_the_case_id(tmp_path: Path) -> None:
    result = convert(tmp_path, _lines(tmp_path, [_chat("conv-17", split="dev"), _chat(18, "b")]))
    assert [c["id"] for c in result.cases] == ["conv-17", "18"]
    # Not repeated in metadata: the case id holds it.
    assert [c.get("metadata") for c in result.cases] == [{"split": "dev"}, None]
    assert "cases" not in result.report.generated_ids and not result.report.warnings


def test_lines_with_and_without_ids(tmp_path: Path) -> None:
    # Each line on its own: its own id when it has a valid one, else the hash of the line
    # (stable: the same line gives the same id), counted as generated.
    rows = [_chat("a1"), _chat(text="no id"), _chat(None, "null id"), _chat("a2")]
    rows[2]["id"] = None
    src = _lines(tmp_path, rows)
    first = convert(tmp_path, src)
    ids = [c["id"] for c in first.cases]
    assert ids[0] == "a1" and ids[3] == "a2"
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids[1:3])
    assert first.report.generated_ids["cases"] == 2
    assert (tmp_path / "again").mkdir() is None
    assert convert(tmp_path / "again", src).out.read_bytes() == first.out.read_bytes()


@pytest.mark.parametrize("bad", ["a/b", "two words", "", "x" * 513, True, 1.5, {"n": 1}, ["a"]])
def test_an_id_that_is_not_a_valid_id_is_kept_and_said(tmp_path: Path, bad: object) -> None:
    result = convert(tmp_path, _lines(tmp_path, [_chat(bad), _chat("ok", "b")]))
    case, other = result.cases
    assert len(case["id"]) == 32 and case["metadata"] == {"id": bad}  # never lost
    assert other["id"] == "ok"
    assert result.report.generated_ids["cases"] == 1
    [warning] = result.report.warnings
    assert warning.startswith("1 case had an `id` that is not a valid case id (non-empty, at "
                              "most 512 characters, without whitespace or `/`), so its id is "
                              "a hash of the row; give --id-from with a template")


def test_a_repeated_own_id_is_a_duplicate(tmp_path: Path) -> None:
    result = convert(tmp_path, _lines(tmp_path, [_chat("same"), _chat("same", "other text")]))
    assert [c["id"] for c in result.cases] == ["same"]
    [reject] = result.rejects
    assert reject["row"] == 2 and reject["id"] == "same" and reject["column"] == "id"
    assert reject["error"] == (
        "Case id 'same' was already used by row 1 (the rows' own `id`: give --id-from to make "
        "ids another way, e.g. --id-from 'ID.{#}' with the row number); case ids must be unique "
        "in a dataset.")


def test_id_from_wins_over_the_own_id(tmp_path: Path) -> None:
    src = _lines(tmp_path, [_chat("a", conv="c1"), _chat("b", "x", conv="c2")])
    result = convert(tmp_path, src, id_from="chat.{conv}.{#}")
    assert [c["id"] for c in result.cases] == ["chat.c1.1", "chat.c2.2"]
    assert result.cases[0]["metadata"] == {"conv": "c1", "id": "a"}  # not the case id: kept
    (tmp_path / "b").mkdir()
    by_key = convert(tmp_path / "b", src, id_from="id")
    assert [c["id"] for c in by_key.cases] == ["a", "b"]
    assert by_key.cases[0]["metadata"] == {"conv": "c1"}


@pytest.mark.parametrize(("rules", "failed"), [
    (["$.error"], ["call_2"]),
    (["never"], []),
    (["$.code=503"], ["call_2"]),
    (["$.city=Paris"], ["call_1"]),
    (["re:unavailable"], ["call_2"]),
    (["re:Paris", "$.error"], ["call_1", "call_2"]),
])
def test_tool_failure_rule(tmp_path: Path, rules: list[str], failed: list[str]) -> None:
    [case] = convert(tmp_path, _lines(tmp_path, [WEATHER]), tool_failure_when=rules).cases
    assert [e["id"] for e in case["toolEvents"] if e["status"] == "failure"] == failed


def test_failure_rules_are_explicit() -> None:
    rules = parse_failure_rules([])
    assert tool_failure(rules, '{"error": null}', {"error": None}) is None
    assert tool_failure(rules, '{"error": false}', {"error": False}) is None
    assert tool_failure(rules, "Error: x", "Error: x") is None  # text is not guessed at
    assert tool_failure(rules, "", {"error": {"code": 1}}) == '{"code":1}'
    with pytest.raises(UsageError, match="is not a rule"):
        parse_failure_rules(["error"])
    with pytest.raises(UsageError, match="not a valid regular expression"):
        parse_failure_rules(["re:("])


def test_failure_patterns_run_in_linear_time_and_refuse_what_re2_cannot() -> None:
    import time

    with pytest.raises(UsageError, match=r"--tool-failure-when 're:\(a\)\\\\1': the pattern "
                                         r"uses what RE2 cannot run"):
        parse_failure_rules([r"re:(a)\1"])
    rules = parse_failure_rules(["re:x.*y", "re:^(a+)+$"])
    started = time.perf_counter()
    assert tool_failure(rules, "x" * 200_000, None) is None
    assert tool_failure(rules, "a" * 100_000 + "b", None) is None
    assert time.perf_counter() - started < 1.0  # Python's re: tens of seconds


def test_same_bytes_on_a_rerun(tmp_path: Path) -> None:
    src = _lines(tmp_path, [WEATHER, AUDIO])
    first = convert(tmp_path, src).out.read_bytes()
    assert convert(tmp_path, src).out.read_bytes() == first
    # The hashed id does not depend on the order of keys in the line.
    reordered = tmp_path / "r" / "chats.jsonl"
    reordered.parent.mkdir()
    reordered.write_text(json.dumps(dict(reversed(list(WEATHER.items())))) + "\n")
    assert convert(reordered.parent, reordered).cases[0]["id"] == json.loads(first.splitlines()[0])["id"]


def test_id_from_a_key_or_template(tmp_path: Path) -> None:
    rows = [{**WEATHER, "request_id": "req-1"}, {**AUDIO, "request_id": "req-2"}]
    src = _lines(tmp_path, rows)
    assert [c["id"] for c in convert(tmp_path, src, id_from="request_id").cases] == ["req-1", "req-2"]
    assert [c["id"] for c in convert(tmp_path, src, id_from="chat.{request_id}.{#}").cases] == [
        "chat.req-1.1", "chat.req-2.2"]


def test_map_does_not_apply(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--map applies to tables"):
        convert(tmp_path, _lines(tmp_path, [WEATHER]), format="openai-chat", maps=["input=x"])
