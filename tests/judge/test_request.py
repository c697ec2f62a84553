"""The one request builder: golden bodies for both providers, exact messages, stable keys."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstream._checks.state import PREAMBLE
from evalstream._judge.answer import ANSWER_SCHEMA
from evalstream._judge.providers import NAMES, REGISTRY
from evalstream._judge.request import (
    ANSWER_INSTRUCTION,
    JudgeConfig,
    build,
    request_key,
)
from evalstream.errors import UsageError
from tests.helpers import golden

GOLDEN = Path(__file__).resolve().parent / "golden"
QUESTION = f"{PREAMBLE}\n\nDoes assistant_response claim a booking that tool_events do not show?"
STATE = ('{"user_input":"Book me for Thursday 2pm.","assistant_response":"All set: Thursday '
         '14:00 ✅","tool_events":[{"id":"t1","name":"book_appointment","status":"failure",'
         '"error":"SLOT_UNAVAILABLE"}]}')


@pytest.mark.parametrize(("name", "config"), [
    ("request.openai.json", JudgeConfig(model="gpt-4.1-mini")),
    ("request.openai-compatible.json",
     JudgeConfig(model="qwen2.5-7b", base_url="http://127.0.0.1:8000/v1")),
    ("request.anthropic.json", JudgeConfig(model="claude-sonnet-4-5", provider="anthropic")),
])
def test_golden_bodies(name: str, config: JudgeConfig) -> None:
    req = build(config, QUESTION, STATE)
    golden(name, req.body + b"\n", GOLDEN)
    body = json.loads(req.body)
    if config.provider == "anthropic":
        assert body["system"] == f"{QUESTION}\n\n{ANSWER_INSTRUCTION}"
        assert body["messages"] == [{"role": "user", "content": STATE}]
        assert body["tool_choice"] == {"type": "tool", "name": "record_verdict"}
        assert body["tools"][0]["input_schema"] == ANSWER_SCHEMA
        assert body["max_tokens"] == 1024
    else:
        assert body["messages"] == [
            {"role": "system", "content": f"{QUESTION}\n\n{ANSWER_INSTRUCTION}"},
            {"role": "user", "content": STATE}]
        assert body["response_format"] == {"type": "json_schema", "json_schema": {
            "name": "verdict", "strict": True, "schema": ANSWER_SCHEMA}}
        # api.openai.com reads max_completion_tokens; compatible servers read max_tokens.
        official = config.base_url == "https://api.openai.com/v1"
        assert ("max_completion_tokens" in body) is official
        assert ("max_tokens" in body) is not official
    assert body["temperature"] == 0.0
    assert req.key == request_key(config, req.body) and len(req.key) == 64


def test_strict_schema_rules() -> None:
    """OpenAI's strict mode: every property required, no others allowed."""
    assert set(ANSWER_SCHEMA["required"]) == set(ANSWER_SCHEMA["properties"])  # type: ignore[arg-type]
    assert ANSWER_SCHEMA["additionalProperties"] is False


def test_key_changes_with_anything_that_changes_the_answer() -> None:
    base = JudgeConfig(model="m", base_url="http://h:1/v1")
    key = build(base, QUESTION, STATE).key
    variants = [JudgeConfig(model="m2", base_url="http://h:1/v1"),
                JudgeConfig(model="m", base_url="http://h:2/v1"),
                JudgeConfig(model="m", base_url="http://h:1/v1", temperature=0.5),
                JudgeConfig(model="m", base_url="http://h:1/v1", temperature=None),
                JudgeConfig(model="m", base_url="http://h:1/v1", max_output_tokens=10),
                JudgeConfig(model="m", base_url="http://h:1/v1", provider="anthropic")]
    keys = {build(c, QUESTION, STATE).key for c in variants}
    assert key not in keys and len(keys) == len(variants)
    assert build(base, QUESTION, STATE).key == key  # deterministic
    assert build(base, QUESTION, STATE.replace("2pm", "3pm")).key != key
    hashes = {c.hash for c in variants}
    assert base.hash not in hashes and len(hashes) == len(variants)


def test_temperature_none_is_not_sent() -> None:
    body = json.loads(build(JudgeConfig(model="o3", temperature=None), QUESTION, STATE).body)
    assert "temperature" not in body


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"model": "m", "provider": "vertex"}, "--provider must be one of openai, anthropic"),
    ({"model": " "}, "--model must name a model"),
    ({"model": "m", "base_url": "ftp://x/v1"}, "--base-url must be an http"),
    ({"model": "m", "base_url": "127.0.0.1:8000/v1"}, "--base-url must be an http"),
    ({"model": "m", "base_url": "https://user:pw@h/v1"}, "must not carry a user or password"),
    ({"model": "m", "base_url": "https://h/v1?key=x"}, "must not carry a query or fragment"),
    ({"model": "m", "temperature": 3.0}, "--temperature must be between 0 and 2"),
    ({"model": "m", "max_output_tokens": 0}, "--max-output-tokens must be positive"),
])
def test_bad_configs(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        JudgeConfig(**kwargs)


def test_host_is_all_a_verdict_keeps_of_the_url() -> None:
    assert JudgeConfig(model="m").host == "api.openai.com"
    assert JudgeConfig(model="m", base_url="http://127.0.0.1:8000/v1/").host == "127.0.0.1:8000"
    assert JudgeConfig(model="m", base_url="http://127.0.0.1:8000/v1/").url == \
        "http://127.0.0.1:8000/v1/chat/completions"
    assert JudgeConfig(model="m", provider="anthropic").url == \
        "https://api.anthropic.com/v1/messages"


@given(question=st.text(), state=st.dictionaries(st.text(), st.text()),
       provider=st.sampled_from(["openai", "anthropic"]))
def test_any_text_reaches_the_judge_exactly(question: str, state: dict, provider: str) -> None:
    """Whatever the question and state hold (quotes, newlines, NUL, any plane), the body is
    JSON and carries them unchanged: the stdlib's reading equals what went in."""
    state_text = json.dumps(state, ensure_ascii=False)
    config = JudgeConfig(model="m", provider=provider)
    body = json.loads(build(config, question, state_text).body)
    system = body["system"] if provider == "anthropic" else body["messages"][0]["content"]
    assert system == f"{question}\n\n{ANSWER_INSTRUCTION}"
    assert body["messages"][-1] == {"role": "user", "content": state_text}


# Issue 23, item 17: a URL that cannot be used is one sentence where --base-url is read (never
# a traceback when the port, the brackets or the host are read later), and the sentence never
# repeats a user, password, query or fragment (any of them may hold a secret).
@pytest.mark.parametrize(("url", "message"), [
    ("http://127.0.0.1:99999/v1", "port must be a number from 1 to 65535"),
    ("http://127.0.0.1:abc/v1", "port must be a number from 1 to 65535"),
    ("http://127.0.0.1:0/v1", "port must be a number from 1 to 65535"),
    ("http://[::1]:99999/v1", "port must be a number from 1 to 65535"),
    ("http://[::1/v1", "is not a URL"),
    ("http://[::g]/v1", "is not a URL"),
    ("http://\u2100/v1", "is not a URL"),
    ("http://a..b/v1", "host name"),
    ("http://" + "a" * 64 + ".example/v1", "host name"),
    ("http://exa\u200bmple/v1", "space or an invisible character"),
    ("http://example.com/v1 ", "space or an invisible character"),
    ("http://example.com/\nv1", "space or an invisible character"),
    ("http:///v1", "must be an http:// or https:// URL"),
    ("ftp://user:SECRET-PW@example.com/v1", "must not carry a user or password"),
    ("http://user:SECRET-PW@[::1/v1", "must not carry a user or password"),
    ("https://user:SECRET-PW#x@h/v1", "must not carry a user or password"),
    ("SECRET-PW@example.com/v1", "must not carry a user or password"),
    ("http://[::1/v1?key=SECRET-PW", "is not a URL"),
    ("http://127.0.0.1:99999/v1?key=SECRET-PW", "must not carry a query or fragment"),
    ("https://h/v1?key=SECRET-PW", "must not carry a query or fragment"),
    ("https://h/v1#SECRET-PW", "must not carry a query or fragment"),
])
def test_a_bad_base_url_is_one_sentence_that_repeats_no_secret(url: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)) as caught:
        JudgeConfig(model="m", base_url=url)
    said = str(caught.value)
    assert "SECRET" not in said and said.startswith("--base-url") and said.endswith(".")


@pytest.mark.parametrize("url", ["http://[::1]:8000/v1", "https://b\u00fccher.example/v1",
                                 "http://localhost:65535", "http://a.b./v1",
                                 "http://h/v1/@models"])
def test_good_base_urls_are_kept(url: str) -> None:
    config = JudgeConfig(model="m", base_url=url)
    assert config.base_url == url.rstrip("/") and config.host


# Every provider, each of its response formats, and the judges that reason first (their
# settings change the body: a tool offered instead of forced, thinking, no temperature).
REASONING = {"openai": {"model": "o3-mini", "reasoning_effort": "low"},
             "azure": {"model": "o3-mini", "reasoning_effort": "low"},
             "anthropic": {"model": "claude-sonnet-4-5", "thinking_budget": 1024,
                           "max_output_tokens": 4096},
             "gemini": {"model": "gemini-2.5-flash", "thinking_budget": 512},
             "bedrock": {"model": "anthropic.claude-sonnet-4-5", "thinking_budget": 1024,
                         "max_output_tokens": 4096}}
ANSWER_CONFIGS = [
    pytest.param(provider, response_format, reasoning,
                 id=f"{provider}-{response_format}{'-reasoning' if reasoning else ''}")
    for provider in REGISTRY for response_format in REGISTRY[provider].response_formats
    for reasoning in (False, True)]


@pytest.mark.parametrize(("provider", "response_format", "reasoning"), ANSWER_CONFIGS)
def test_a_rubric_without_na_is_asked_for_pass_or_fail_by_every_provider_and_format(
        provider: str, response_format: str, reasoning: bool) -> None:
    # Issue 25 (allows_na) met issue 27's providers and --response-format: whatever carries
    # the answer's schema (a response_format, a tool, a responseSchema) leaves `na` out for a
    # rubric that does not allow it, and the instruction (all a `none` request has) says so.
    from evalstream._checks.state import ANSWER_INSTRUCTION_NO_NA

    kw: dict[str, object] = {"model": "m", "provider": provider,
                             "response_format": response_format}
    if provider == "azure":
        kw["base_url"] = "https://r.openai.azure.com"
    if reasoning:
        kw.update(REASONING[provider])
    config = JudgeConfig(**kw)  # type: ignore[arg-type]
    schema = response_format != "none"
    for allows_na, statuses in ((True, b'["pass","fail","na"]'), (False, b'["pass","fail"]')):
        body = build(config, QUESTION, STATE, allows_na).body
        assert body.count(b'"enum":' + statuses) == (1 if schema else 0), body
        assert body.count(b'"enum":') == (1 if schema else 0)
        instruction = ANSWER_INSTRUCTION if allows_na else ANSWER_INSTRUCTION_NO_NA
        assert json.dumps(instruction, ensure_ascii=False)[1:-1].encode() in body
        if not allows_na:
            assert b'"na"' not in body
        # Issue 26 met all of them: the reason before the status, in the schema (whatever
        # carries it) and in the instruction, with and without `na`.
        _asks_reason_first(body, b'"status"', schema)
        assert instruction.index('"reason"') < instruction.index('"status"')
    # The two requests are two keys: an answer to one is never the other's.
    assert build(config, QUESTION, STATE, True).key != build(config, QUESTION, STATE, False).key
    # Issue 28 met both: a pairwise state is asked in the pairwise form ({reason, better},
    # the reason first) by the same provider, format and reasoning, never with `na`, whatever
    # `allows_na` its state says; `config.of` picks that form for a state with a pair.
    from evalstream._checks.state import PAIR_ANSWER_INSTRUCTION

    pair = config.pairwise
    assert pair.response_format == config.response_format and pair.allows_na is False
    pairwise = {build(pair, QUESTION, STATE, allows_na).body for allows_na in (True, False)}
    state = SimpleNamespace(pair=object(), allows_na=False)
    assert pairwise == {build(config.of(state), QUESTION, STATE).body}
    body = pairwise.pop()
    assert body.count(b'"enum":["response_1","response_2","tie"]') == (1 if schema else 0), body
    assert body.count(b'"enum":') == (1 if schema else 0)
    _asks_reason_first(body, b'"better"', schema)
    assert PAIR_ANSWER_INSTRUCTION.index('"reason"') < PAIR_ANSWER_INSTRUCTION.index('"better"')
    assert json.dumps(PAIR_ANSWER_INSTRUCTION, ensure_ascii=False)[1:-1].encode() in body
    assert json.dumps(ANSWER_INSTRUCTION, ensure_ascii=False)[1:-1].encode() not in body
    assert b'"na"' not in body
    assert build(pair, QUESTION, STATE).key not in {
        build(config, QUESTION, STATE, allows_na).key for allows_na in (True, False)}
    for allows_na in (True, False):  # and a pointwise state gets its own form back
        assert config.of(SimpleNamespace(pair=None, allows_na=allows_na)).allows_na is allows_na


def _asks_reason_first(body: bytes, decision: bytes, schema: bool) -> None:
    """The answer's schema in ``body`` (there when ``schema``) names the reason before the
    decision (``"status"`` or ``"better"``) in its properties and its required list (and
    Gemini's propertyOrdering, which follows them)."""
    if not schema:
        assert b'"properties"' not in body
        return
    asked = body[body.rindex(b'"properties"'):]
    assert _first(asked, b'"reason"', decision) == b'"reason"', body
    required = asked[asked.index(b'"required"'):]
    assert _first(required, b'"reason"', decision) == b'"reason"', body
    if b'"propertyOrdering"' in asked:
        ordering = asked[asked.index(b'"propertyOrdering"'):]
        assert _first(ordering, b'"reason"', decision) == b'"reason"', body


def _first(data: bytes, a: bytes, b: bytes) -> bytes:
    """Which of ``a`` and ``b`` comes first in ``data`` (both must be there)."""
    assert a in data and b in data
    return a if data.index(a) < data.index(b) else b


@pytest.mark.parametrize("provider", NAMES)
def test_every_provider_asks_for_the_reason_before_the_status(provider: str) -> None:
    """Structured output generates properties in schema order: the grounds come before the
    status (issue 26; evidence-first prompting), in the schema and in the instruction."""
    extra = {"azure": {"base_url": "https://example.test"},
             "bedrock": {"region": "eu-west-1"}}.get(provider, {})
    config = JudgeConfig(model="m", provider=provider, **extra)
    body = build(config, QUESTION, STATE).body
    schema = body[body.rindex(b'"properties"'):]
    assert _first(schema, b'"reason"', b'"status"') == b'"reason"'
    assert _first(schema[schema.index(b'"required"'):], b'"reason"', b'"status"') == b'"reason"'
    assert ANSWER_INSTRUCTION.index('"reason"') < ANSWER_INSTRUCTION.index('"status"')
    assert list(ANSWER_SCHEMA["properties"]) == ["reason", "status"]  # type: ignore[call-overload]


@pytest.mark.parametrize("answer", [b'{"reason": "quoted", "status": "fail"}',
                                    b'{"status": "fail", "reason": "quoted"}'])
def test_answers_are_read_in_either_order(answer: bytes) -> None:
    """Stores written before issue 26 hold `{status, reason}` answers: still read."""
    from evalstream._judge.answer import read_json

    parsed = read_json(answer, None, None)
    assert (parsed.status, parsed.reason, parsed.cause) == ("fail", "quoted", None)
