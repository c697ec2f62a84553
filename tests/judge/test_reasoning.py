"""Reasoning models and the ways an answer is asked for (issue 27): OpenAI's o-series and
GPT-5 (``max_completion_tokens``, no temperature, ``reasoning_effort``), Anthropic's extended
thinking (thinking blocks before the tool call; the tool offered, not forced), DeepSeek- and
Qwen-style reasoning (``reasoning_content``, ``<think>`` before the JSON), and
``--response-format``. The reasoning is never read as the answer; its tokens are counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstream._judge import live
from evalstream._judge.answer import ANSWER_SCHEMA, read_text
from evalstream._judge.dryrun import dry_run
from evalstream._judge.providers import get
from evalstream._judge.request import JudgeConfig
from evalstream._render.judge_summary import dry_run_text as text
from evalstream.errors import UsageError
from tests.judge.fake_server import THOUGHT
from tests.judge.support import FakeServer, lines, options, states

LOCAL = "http://127.0.0.1:8000/v1"


def body(**kw: object) -> dict:
    config = JudgeConfig(**kw)  # type: ignore[arg-type]
    return json.loads(config.body("Q?", '{"user_input":"x"}'))


@pytest.mark.parametrize("model", ["o3-mini", "o1", "o4-mini", "gpt-5", "gpt-5-mini",
                                   "openai/gpt-5-nano"])
def test_openai_reasoning_models_get_no_temperature_and_the_completion_limit(model: str) -> None:
    for base_url in ("", LOCAL):  # on any server: they refuse max_tokens and a temperature
        sent = body(model=model, base_url=base_url, max_output_tokens=500)
        assert "temperature" not in sent and "max_tokens" not in sent
        assert sent["max_completion_tokens"] == 500
    sent = body(model=model, reasoning_effort="low")
    assert sent["reasoning_effort"] == "low"
    config = JudgeConfig(model=model)
    assert config.info.temperature is None  # what the verdicts record: not sent


def test_other_openai_models_keep_temperature_and_the_local_limit_name() -> None:
    for model in ("gpt-4.1-mini", "gpt-5-chat-latest", "qwen2.5-7b"):
        sent = body(model=model, base_url=LOCAL)
        assert sent["temperature"] == 0.0 and sent["max_tokens"] == 1024
        assert "reasoning_effort" not in sent
    # an effort makes any model a reasoning one (DeepSeek-R1 behind vLLM, say)
    sent = body(model="deepseek-r1", base_url=LOCAL, reasoning_effort="high")
    assert "temperature" not in sent and sent["max_completion_tokens"] == 1024


def test_the_response_formats_of_openai() -> None:
    assert body(model="m")["response_format"]["type"] == "json_schema"
    assert body(model="m", response_format="json_object")["response_format"] == {
        "type": "json_object", "schema": ANSWER_SCHEMA}
    assert "response_format" not in body(model="m", response_format="none")


def test_anthropic_thinking_offers_the_tool_and_sends_no_temperature() -> None:
    sent = body(model="claude-sonnet-4-5", provider="anthropic", thinking_budget=2048,
                max_output_tokens=4096)
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert sent["tool_choice"] == {"type": "auto"} and "temperature" not in sent
    plain = body(model="claude-sonnet-4-5", provider="anthropic")
    assert plain["tool_choice"] == {"type": "tool", "name": "record_verdict"}
    assert "thinking" not in plain and plain["temperature"] == 0.0
    bare = body(model="claude-sonnet-4-5", provider="anthropic", response_format="none")
    assert "tools" not in bare and "tool_choice" not in bare


@pytest.mark.parametrize(("kw", "said"), [
    ({"provider": "anthropic", "thinking_budget": 512}, "at least 1,024 tokens"),
    ({"provider": "anthropic", "thinking_budget": 2048},
     r"--max-output-tokens \(1,024\) must be more than --thinking-budget \(2,048\)"),
    ({"provider": "bedrock", "thinking_budget": 512}, "at least 1,024 tokens"),
    ({"provider": "bedrock", "thinking_budget": 2048},
     r"--max-output-tokens \(1,024\) must be more than --thinking-budget \(2,048\)"),
    ({"reasoning_effort": "extreme"}, "--reasoning-effort must be one of none, minimal"),
    ({"provider": "anthropic", "reasoning_effort": "low"},
     "--reasoning-effort applies to --provider openai, azure only, not anthropic"),
    ({"thinking_budget": 2048}, "--thinking-budget applies to --provider anthropic"),
    ({"provider": "anthropic", "response_format": "json_object"},
     "--response-format json_object is not one --provider anthropic takes: json_schema, none"),
])
def test_settings_a_provider_cannot_take_are_refused(kw: dict, said: str) -> None:
    with pytest.raises(UsageError, match=said):
        JudgeConfig(model="m", **kw)


@pytest.mark.parametrize(("content", "status", "unstructured"), [
    ('{"status": "pass", "reason": "r"}', "pass", False),
    (f'<think>{THOUGHT}</think>\n{{"status": "pass", "reason": "r"}}', "pass", True),
    ('<think>\n</think>\n\n```json\n{"status": "na", "reason": "r"}\n```', "na", True),
    ('```json\n{"status": "fail", "reason": "r"}\n```', "fail", True),
    (f"<think>{THOUGHT}", "unscored", False),  # cut inside its thinking: nothing to read
    (f"<think>{THOUGHT}</think>", "unscored", False),  # thought, never answered
])
def test_reasoning_before_the_json_is_never_read_as_the_answer(
        content: str, status: str, unstructured: bool) -> None:
    parsed = read_text(content, None, None)
    assert parsed.status == status
    assert parsed.unstructured is unstructured
    if status == "unscored":
        assert parsed.cause == "not_json"


def test_reasoning_content_and_thinking_blocks_are_never_the_answer() -> None:
    openai = get("openai").parse(json.dumps({"choices": [{"message": {
        "content": None, "reasoning_content": THOUGHT}, "finish_reason": "length"}]}).encode())
    assert (openai.status, openai.cause) == ("unscored", "truncated")
    anthropic = get("anthropic").parse(json.dumps({"type": "message", "content": [
        {"type": "thinking", "thinking": THOUGHT, "signature": "s"},
        {"type": "redacted_thinking", "data": "xyz"},
        {"type": "text", "text": '{"status": "pass", "reason": "r"}'}],
        "stop_reason": "end_turn"}).encode())
    assert (anthropic.status, anthropic.unstructured) == ("pass", True)


def test_reasoning_tokens_are_read_and_counted_in_the_output() -> None:
    parsed = get("openai").parse(json.dumps({"choices": [{"message": {
        "content": '{"status": "pass", "reason": "r"}'}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 300,
                  "completion_tokens_details": {"reasoning_tokens": 280}}}).encode())
    assert parsed.usage is not None
    assert (parsed.usage.output_tokens, parsed.usage.reasoning_tokens) == (300, 280)
    impossible = get("openai").parse(json.dumps({"choices": [{"message": {
        "content": '{"status": "pass", "reason": "r"}'}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3,
                  "completion_tokens_details": {"reasoning_tokens": 280}}}).encode())
    assert impossible.usage is not None and impossible.usage.reasoning_tokens is None


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_reasoning_judge_end_to_end(tmp_path: Path, server: FakeServer, provider: str) -> None:
    path = states(tmp_path, ["FAKE:think", "FAKE:fenced", "FAKE:pass"])
    out = tmp_path / "v.jsonl"
    model = "o3-mini" if provider == "openai" else "claude-sonnet-4-5"
    kw = {"thinking_budget": 1024} if provider == "anthropic" else {}
    opts = options(server, path, out, provider=provider, model=model, max_output_tokens=2048)
    opts.config = JudgeConfig(model=model, provider=provider, base_url=server.url,
                              max_output_tokens=2048, **kw)  # type: ignore[arg-type]
    report = live.run(opts)
    verdicts = lines(out)
    assert [v["status"] for v in verdicts] == ["pass", "pass", "pass"]
    assert all("thought" not in v["rationale"] for v in verdicts)
    assert report.without_structured_output == (2 if provider == "openai" else 1)
    assert all(v["judge"]["temperature"] is None for v in verdicts)
    if provider == "openai":
        assert verdicts[0]["usage"]["reasoning_tokens"] == 40
        assert report.usage.reasoning_tokens == 40
        assert "reasoning_tokens" not in verdicts[2]["usage"]


def test_dry_run_says_the_bound_holds_the_reasoning(tmp_path: Path, server: FakeServer) -> None:
    path = states(tmp_path, ["a"])
    opts = options(server, path, tmp_path / "v.jsonl", model="o3-mini")
    said = text(dry_run(opts))
    assert "the judge reasons first, and its reasoning is output within that bound" in said
    plain = text(dry_run(options(server, path, tmp_path / "v.jsonl", model="gpt-4.1-mini")))
    assert "reasons first" not in plain


def test_the_summary_says_reasoning_tokens_and_answers_in_text(tmp_path: Path,
                                                              server: FakeServer) -> None:
    from evalstream._render.judge_summary import lines as summary

    path = states(tmp_path, ["FAKE:think", "FAKE:fenced"])
    opts = options(server, path, tmp_path / "v.jsonl", model="o3-mini")
    said = "\n".join(summary(live.run(opts)))
    assert "(40 of them reasoning)" in said
    assert "answers without structured output (read from text: a fence, reasoning before " \
        "the JSON, text instead of the tool call): 2" in said
