"""The one answer parser: fail-closed on every bad answer, for every provider."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstream._judge import answer
from evalstream._judge.answer import CAUSES, DETAIL_CHARS, Parsed, http_error_detail, unfenced
from evalstream._judge.providers import REGISTRY, get


def parse(provider: str, body: bytes) -> Parsed:
    """A response body read as the provider of this name reads it."""
    return get(provider).parse(body)


def openai(content: Any = None, finish: str = "stop", refusal: Any = None,
           usage: bool = True) -> bytes:
    body: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content, "refusal": refusal},
         "finish_reason": finish}]}
    if usage:
        body["usage"] = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    return json.dumps(body).encode()


def anthropic(content: list[dict[str, Any]], stop: str = "tool_use") -> bytes:
    return json.dumps({"id": "msg_1", "type": "message", "role": "assistant",
                       "content": content, "stop_reason": stop,
                       "usage": {"input_tokens": 100, "output_tokens": 20}}).encode()


def gemini(text: str | None, finish: str = "STOP", thought: str | None = None) -> bytes:
    parts = [] if text is None else [{"text": text}]
    if thought is not None:
        parts.insert(0, {"text": thought, "thought": True})
    return json.dumps({"candidates": [{"content": {"role": "model", "parts": parts},
                                       "finishReason": finish, "index": 0}],
                       "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20},
                       "responseId": "r1"}).encode()


def bedrock(content: list[dict[str, Any]], stop: str = "tool_use") -> bytes:
    return json.dumps({"output": {"message": {"role": "assistant", "content": content}},
                       "stopReason": stop,
                       "usage": {"inputTokens": 100, "outputTokens": 20}}).encode()


def tool_use(answer: Any, name: str = "record_verdict") -> dict[str, Any]:
    return {"toolUse": {"toolUseId": "t1", "name": name, "input": answer}}


def tool(answer: Any, name: str = "record_verdict") -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_1", "name": name, "input": answer}


FENCE = re.compile(r"^```[A-Za-z]*\s*\n(.*)\n\s*```$", re.S)  # the pattern fences follow
GOOD = '{"status": "fail", "reason": "The booking failed (SLOT_UNAVAILABLE)."}'

# (provider, body, status, cause)
CASES = [
    ("openai", openai(GOOD), "fail", None),
    ("openai", openai('{"status":"na","reason":""}'), "na", None),
    ("openai", openai(f"```json\n{GOOD}\n```"), "fail", None),  # a fenced answer
    ("openai", openai(f"  {GOOD}\n"), "fail", None),
    ("openai", openai("The answer is pass."), "unscored", "not_json"),
    ("openai", openai(""), "unscored", "not_json"),
    ("openai", openai(None), "unscored", "not_json"),
    ("openai", openai(GOOD + " extra"), "unscored", "not_json"),
    ("openai", openai('{"status": "PASS", "reason": "x"}'), "unscored", "wrong_shape"),
    ("openai", openai('{"status": "pass"}'), "unscored", "wrong_shape"),
    ("openai", openai('{"status": "pass", "reason": "x", "score": 1}'), "unscored",
     "wrong_shape"),
    ("openai", openai('{"status": true, "reason": "x"}'), "unscored", "wrong_shape"),
    ("openai", openai('["pass", "x"]'), "unscored", "wrong_shape"),
    ("openai", openai('{"status": "pass", "reason": 5}'), "unscored", "wrong_shape"),
    ("openai", openai(None, refusal="I can't help with that."), "unscored", "refusal"),
    ("openai", openai(GOOD, finish="content_filter"), "unscored", "refusal"),
    ("openai", openai('{"status": "pass", "rea', finish="length"), "unscored", "truncated"),
    ("openai", openai(GOOD, finish="length"), "unscored", "truncated"),
    ("openai", b"<html>502 Bad Gateway</html>", "unscored", "bad_response"),
    ("openai", b'{"choices": []}', "unscored", "bad_response"),
    ("openai", b'{"error": {"message": "overloaded"}}', "unscored", "bad_response"),
    ("anthropic", anthropic([tool(json.loads(GOOD))]), "fail", None),
    ("anthropic", anthropic([{"type": "text", "text": "Let me record it."},
                             tool({"status": "pass", "reason": "ok"})]), "pass", None),
    ("anthropic", anthropic([tool({"status": "pass"})]), "unscored", "wrong_shape"),
    ("anthropic", anthropic([tool({"status": "maybe", "reason": "x"})]), "unscored",
     "wrong_shape"),
    ("anthropic", anthropic([tool({"status": "pass", "reason": "x"}, name="other")]),
     "unscored", "not_json"),
    ("anthropic", anthropic([{"type": "text", "text": GOOD}], "end_turn"), "fail", None),
    ("anthropic", anthropic([{"type": "text", "text": "pass"}], "end_turn"), "unscored",
     "not_json"),
    ("anthropic", anthropic([], "refusal"), "unscored", "refusal"),
    ("anthropic", anthropic([{"type": "text", "text": "{\"status\""}], "max_tokens"),
     "unscored", "truncated"),
    ("anthropic", anthropic([tool(json.loads(GOOD))], "max_tokens"), "unscored", "truncated"),
    ("anthropic", b'{"type": "error", "error": {"type": "overloaded_error"}}', "unscored",
     "bad_response"),
    ("anthropic", b"[]", "unscored", "bad_response"),
    # Ambiguous answers (issue 23): never resolved by picking one reading.
    ("openai", openai('{"status":"fail","reason":"x","status":"pass"}'), "unscored",
     "ambiguous"),
    ("openai", openai('{"status":"pass","reason":"x","st\\u0061tus":"fail"}'), "unscored",
     "ambiguous"),
    ("openai", openai('{"status":"pass","reason":"a","reason":"b"}'), "unscored", "ambiguous"),
    ("openai", openai('```json\n{"status":"na","status":"pass","reason":"x"}\n```'),
     "unscored", "ambiguous"),
    ("anthropic", anthropic([tool({"status": "fail", "reason": "x"}),
                             tool({"status": "pass", "reason": "y"})]), "unscored", "ambiguous"),
    ("anthropic", anthropic([tool({"status": "pass", "reason": "x"}),
                             tool({"status": "pass", "reason": "x"})]), "unscored", "ambiguous"),
    ("anthropic", anthropic([{"type": "text", "text": '{"status":"fail","reason":"x",'
                              '"status":"pass"}'}], "end_turn"), "unscored", "ambiguous"),
    ("anthropic", anthropic([tool({"status": "pass", "reason": "x"}, name="other"),
                             tool({"status": "fail", "reason": "y"})]), "fail", None),
    # Azure answers as OpenAI (its provider is OpenAI's, but for URLs and headers).
    ("azure", openai(GOOD), "fail", None),
    ("azure", openai(None, refusal="no"), "unscored", "refusal"),
    # Gemini (issue 27)
    ("gemini", gemini(GOOD), "fail", None),
    ("gemini", gemini(f"```json\n{GOOD}\n```"), "fail", None),
    ("gemini", gemini(GOOD, thought='{"status": "pass", "reason": "thought"}'), "fail", None),
    ("gemini", gemini("pass"), "unscored", "not_json"),
    ("gemini", gemini(None), "unscored", "not_json"),
    ("gemini", gemini('{"status": "pass"}'), "unscored", "wrong_shape"),
    ("gemini", gemini(GOOD, "SAFETY"), "unscored", "refusal"),
    ("gemini", gemini(GOOD, "RECITATION"), "unscored", "refusal"),
    ("gemini", gemini('{"status": "fa', "MAX_TOKENS"), "unscored", "truncated"),
    ("gemini", b'{"promptFeedback": {"blockReason": "OTHER"}, "usageMetadata": '
               b'{"promptTokenCount": 100}}', "unscored", "refusal"),
    ("gemini", b'{"candidates": []}', "unscored", "bad_response"),
    ("gemini", b'{"error": {"code": 400, "message": "bad"}}', "unscored", "bad_response"),
    ("gemini", b"[]", "unscored", "bad_response"),
    # Bedrock Converse (issue 27)
    ("bedrock", bedrock([tool_use(json.loads(GOOD))]), "fail", None),
    ("bedrock", bedrock([{"reasoningContent": {"reasoningText": {"text": "pass?"}}},
                         tool_use({"status": "na", "reason": "x"})]), "na", None),
    ("bedrock", bedrock([{"text": GOOD}], "end_turn"), "fail", None),
    ("bedrock", bedrock([tool_use({"status": "pass"})]), "unscored", "wrong_shape"),
    ("bedrock", bedrock([tool_use({"status": "pass", "reason": "x"}, name="other")]),
     "unscored", "not_json"),
    ("bedrock", bedrock([tool_use({"status": "fail", "reason": "x"}),
                         tool_use({"status": "pass", "reason": "y"})]), "unscored",
     "ambiguous"),
    ("bedrock", bedrock([], "content_filtered"), "unscored", "refusal"),
    ("bedrock", bedrock([], "guardrail_intervened"), "unscored", "refusal"),
    ("bedrock", bedrock([{"text": '{"sta'}], "max_tokens"), "unscored", "truncated"),
    ("bedrock", b'{"message": "The security token included in the request is invalid."}',
     "unscored", "bad_response"),
    ("bedrock", b"[]", "unscored", "bad_response"),
]


@pytest.mark.parametrize(("provider", "body", "status", "cause"), CASES)
def test_answers(provider: str, body: bytes, status: str, cause: str | None) -> None:
    parsed = parse(provider, body)
    assert (parsed.status, parsed.cause) == (status, cause)
    if cause is None:
        assert parsed.reason is not None and parsed.detail is None
    else:
        assert parsed.reason is None and parsed.detail
        assert len(parsed.detail) <= 2 * DETAIL_CHARS + 120 and "\n" not in parsed.detail
    if b'"usage"' in body:
        assert parsed.usage is not None and parsed.usage.input_tokens == 100


def test_a_tool_input_with_a_key_given_twice_is_ambiguous() -> None:
    body = anthropic([tool({"status": "fail", "reason": "x"})]).replace(
        b'"status": "fail"', b'"status": "fail", "status": "pass"')
    parsed = parse("anthropic", body)
    assert (parsed.status, parsed.cause) == ("unscored", "ambiguous")
    assert parsed.detail is not None and parsed.detail.startswith("`status` is given 2 times")


def test_more_than_one_choice_is_ambiguous() -> None:
    body = json.loads(openai('{"status": "fail", "reason": "x"}'))
    body["choices"].append({"index": 1, "message": {"role": "assistant",
                                                    "content": '{"status": "pass", "reason": "y"}'},
                            "finish_reason": "stop"})
    parsed = parse("openai", json.dumps(body).encode())
    assert (parsed.status, parsed.cause) == ("unscored", "ambiguous")
    assert parsed.detail is not None and parsed.detail.startswith("2 choices")


def test_usage_and_id() -> None:
    parsed = parse("openai", openai(GOOD))
    assert (parsed.usage.input_tokens, parsed.usage.output_tokens) == (100, 20)  # type: ignore[union-attr]
    assert parsed.response_id == "chatcmpl-1"
    assert parse("openai", openai(GOOD, usage=False)).usage is None


def test_http_error_detail() -> None:
    assert http_error_detail(400, b'{"error": {"message": "context too long"}}') == \
        "HTTP 400: context too long"
    assert http_error_detail(502, b"<html>\n bad gateway </html>") == \
        "HTTP 502: <html> bad gateway </html>"
    assert len(http_error_detail(500, b"x" * 10_000)) <= DETAIL_CHARS + 20


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    if len({k for k, _ in pairs}) < len(pairs):
        raise ValueError("a key given twice")
    return dict(pairs)


@pytest.mark.slow
@given(content=st.one_of(st.text(), st.binary().map(lambda b: b.decode("latin-1")),
                         st.builds(json.dumps, st.recursive(
                             st.none() | st.booleans() | st.integers() | st.text(),
                             lambda c: st.lists(c) | st.dictionaries(st.text(), c)))),
       finish=st.sampled_from(["stop", "length", "content_filter", None]),
       provider=st.sampled_from(["openai", "anthropic", "gemini", "bedrock"]))
def test_never_pass_without_a_valid_answer(content: str, finish: str | None,
                                           provider: str) -> None:
    """Whatever the model says, the verdict is pass/fail/na only when the text is exactly a
    valid answer (read independently with the stdlib), and unscored with a cause otherwise."""
    if provider == "openai":
        body = openai(content, finish=finish or "stop")
    elif provider == "gemini":
        body = gemini(content, {"length": "MAX_TOKENS", "content_filter": "SAFETY"}.get(
            finish or "", "STOP"))
    elif provider == "bedrock":
        body = bedrock([{"text": content}], {"length": "max_tokens", "content_filter":
                                             "content_filtered"}.get(finish or "", "end_turn"))
    else:
        body = anthropic([{"type": "text", "text": content}],
                         {"length": "max_tokens", None: "end_turn"}.get(finish, "end_turn"))
    parsed = parse(provider, body)
    text = content.strip()
    if text.startswith("<think>") and "</think>" in text:  # reasoning first: never the answer
        text = text[text.index("</think>") + len("</think>"):].strip()
    fenced = FENCE.match(text)  # fences are allowed
    try:  # a key given twice is no valid answer
        loaded = json.loads(fenced[1] if fenced else text, object_pairs_hook=unique_keys)
    except ValueError:
        loaded = None
    valid = (isinstance(loaded, dict) and set(loaded) == {"status", "reason"}
             and loaded["status"] in ("pass", "fail", "na") and isinstance(loaded["reason"], str))
    stopped = finish in ("length", "content_filter") if provider != "anthropic" \
        else finish == "length"
    if parsed.status == "unscored":
        assert parsed.cause in CAUSES
    else:
        assert valid and not stopped and parsed.status == loaded["status"]


@given(st.binary())
def test_any_bytes_never_raise(body: bytes) -> None:
    for provider in REGISTRY:
        parsed = parse(provider, body)
        assert parsed.status in ("pass", "fail", "na", "unscored")


@given(st.lists(st.sampled_from(["`", "```", "\n", " ", "\t", "\x1c", "\u2028", "\xa0", "j",
                                 "Z", "{", "}", "5", "\r"]), max_size=30).map("".join))
def test_fences_are_read_as_the_pattern_reads_them(text: str) -> None:
    """The linear reader finds exactly the fences the pattern finds (the pattern, on Python's
    ``re``, is fine on such short texts)."""
    text = text.strip()
    fenced = FENCE.match(text)
    assert unfenced(text) == (fenced[1].strip() if fenced else text)


@pytest.mark.parametrize("text", [
    "```json\n" + "\n" * 5_000 + "x",  # an opened fence and a run of newlines (issue 23)
    "```json\n" + "\n" * 5_000 + "```x",
    "```" + "\n" * 5_000 + '{"status":"pass","reason":"x"}\n```',
    "```" + " \n" * 20_000 + "```",
    "```json" + "\n" * 200_000,
])
def test_fences_take_linear_time(text: str) -> None:
    import time

    started = time.perf_counter()
    for provider, body in (("openai", openai(text)),
                           ("anthropic", anthropic([{"type": "text", "text": text}], "end_turn"))):
        assert parse(provider, body).status in ("pass", "unscored")
    assert time.perf_counter() - started < 0.25  # Python's re: 327 s for 5,000 newlines


@given(st.lists(st.tuples(st.sampled_from(["status", "reason", "st\\u0061tus"]),
                          st.sampled_from(["pass", "fail", "na", "x"])), min_size=1, max_size=4),
       st.sampled_from(["openai", "anthropic"]))
def test_an_answer_giving_a_key_twice_is_never_scored(pairs: list[tuple[str, str]],
                                                      provider: str) -> None:
    """Written key by key (a key may come twice, or spelled with an escape): scored exactly
    when every key comes once, as the standard library's reader sees them."""
    text = "{" + ",".join(f'"{k}":"{v}"' for k, v in pairs) + "}"
    if provider == "openai":
        parsed = parse(provider, openai(text))
    else:
        parsed = parse(provider, anthropic([tool({})]).replace(b'"input": {}',
                                                                  b'"input": ' + text.encode()))
    try:
        loaded = json.loads(text, object_pairs_hook=unique_keys)
    except ValueError:
        loaded = None
    valid = loaded is not None and set(loaded) == {"status", "reason"} and \
        loaded["status"] in ("pass", "fail", "na")
    assert parsed.status == (loaded["status"] if valid else "unscored")
    if len({json.loads(f'"{k}"') for k, _ in pairs}) < len(pairs):
        assert parsed.cause == "ambiguous" or parsed.cause == "wrong_shape"


@pytest.mark.parametrize("text", [
    '{"status":"pass","reason":"x"}',
    '{"status":"pass","status":"fail","reason":"x"}',
    '{"reason":"see \\"status\\" above","status":"pass"}',  # the key's text in a string
    '{"reason":"a \\"status","status":"pass"}',  # ... written "status" with its quotes
    '{"reason":"x", "status" : "pass",\n "status":"na"}',
    '{"reason":"x","st\\u0061tus":"pass","status":"fail"}',
    '{"reason":"\\u00e9","status":"pass"}',
    '{"reason":"x","reason":"y","status":"pass"}',
])
def test_the_quick_look_for_a_repeated_key_agrees_with_reading_every_pair(text: str) -> None:
    # Issue 31: only answers that may hold a key twice are read by the standard library.
    data = text.encode()
    keys = [k for k, _ in json.loads(data, object_pairs_hook=list)]
    twice = next((k for k in ("status", "reason") if keys.count(k) > 1), None)
    said = answer._repeated_key(data)
    assert (said is None) == (twice is None), (text, said)
    if twice is not None:
        assert said == f"`{twice}` is given {keys.count(twice)} times"
