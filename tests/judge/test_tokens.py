"""Token counts of a request: the family's encoding where known, else an estimate that says
so; OpenAI's documented chat overhead and the answer's schema (as build's budget counts them);
every count tiktoken's. The budget against the exact bytes of a request body."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalstream._checks.state import ANSWER_SCHEMA
from evalstream._judge import tokens
from evalstream.errors import UsageError
from tests.helpers import oracle_count

SCHEMA = json.dumps(ANSWER_SCHEMA, separators=(",", ":"))  # as msgspec writes it


def test_families() -> None:
    assert tokens.encoding_for("openai", "gpt-4.1-mini") == "o200k_base"
    assert tokens.encoding_for("openai", "gpt-4o-2024-08-06") == "o200k_base"
    assert tokens.encoding_for("openai", "o3-mini") == "o200k_base"
    assert tokens.encoding_for("openai", "gpt-4-turbo") == "cl100k_base"
    assert tokens.encoding_for("openai", "gpt-3.5-turbo") == "cl100k_base"
    assert tokens.encoding_for("openai", "qwen2.5-7b") is None
    assert tokens.encoding_for("anthropic", "claude-sonnet-4-5") is None


def test_counter_says_which_encoding_and_when_it_estimates() -> None:
    c = tokens.counter("openai", "gpt-4.1")
    assert c == ("o200k_base", True, c.note) and "the encoding of gpt-4.1" in c.note
    c = tokens.counter("openai", "gpt-4-turbo")
    assert c.exact and c.encoding == "cl100k_base"
    c = tokens.counter("anthropic", "claude-sonnet-4-5")
    assert not c.exact and c.encoding == "o200k_base"
    assert c.note == ("Anthropic's tokenizer is not public; counted with o200k_base (the "
                      "default), an estimate")
    c = tokens.counter("openai", "qwen2.5-7b", "cl100k_base")
    assert not c.exact and c.encoding == "cl100k_base" and "(--tokenizer)" in c.note
    c = tokens.counter("openai", "gpt-4.1-mini", "cl100k_base")  # overrides the family
    assert c == ("cl100k_base", False, "counted with cl100k_base (--tokenizer), not "
                                       "gpt-4.1-mini's o200k_base: an estimate")
    assert tokens.counter("openai", "gpt-4.1-mini", "o200k_base").exact
    with pytest.raises(UsageError, match="unknown tokenizer"):
        tokens.counter("openai", "llama", "p50k_base")


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_counts_equal_tiktoken_plus_overhead(encoding: str) -> None:
    system = "You judge.\n\nAnswer with JSON <|endoftext|>"
    policy = "Refunds within 30 days. " * 300
    for i in range(3):  # the policy piece comes from the cache the second time
        user = ('{"user_input":"héllo 😀 %d","conversation":[{"id":"m1","role":"system",'
                '"content":"%s"}],"policy":"%s"}' % (i, policy, policy))
        expected = (3 + oracle_count("system", encoding) + oracle_count(system, encoding)
                    + 3 + oracle_count("user", encoding) + oracle_count(user, encoding) + 3
                    + oracle_count(SCHEMA, encoding))
        assert tokens.request_tokens(system, user, encoding) == expected
    assert tokens.request_tokens(system, "not json {", encoding) == (
        9 + oracle_count("system", encoding) + oracle_count("user", encoding)
        + oracle_count(system, encoding) + oracle_count("not json {", encoding)
        + oracle_count(SCHEMA, encoding))
    assert tokens.count("<|endoftext|>", encoding) > 1  # read as text, not a special token


def _texts(body: dict[str, Any]) -> tuple[str, str, int, dict[str, Any]]:
    """(system text, user text, output bound, answer schema) of a request body of either
    shape: OpenAI chat completions, Anthropic messages."""
    if "system" in body:
        (user,) = body["messages"]
        return body["system"], user["content"], body["max_tokens"], \
            body["tools"][0]["input_schema"]
    system, user = body["messages"]
    bound = body.get("max_tokens", body.get("max_completion_tokens"))  # api.openai.com's name
    return system["content"], user["content"], bound, \
        body["response_format"]["json_schema"]["schema"]


@pytest.mark.slow  # four commands, each a new process
@pytest.mark.parametrize(("provider", "allows_na"), [("openai", True), ("anthropic", False)])
def test_the_budget_counts_everything_the_request_body_sends(tmp_path: Path, provider: str,
                                                             allows_na: bool) -> None:
    # Issue 25: the budget counted the state and the longest question, not the answer
    # instruction, the framing nor the answer's bound. Here it is checked against the exact
    # bytes `judge --show-request` prints, counted with the tokenizer build used.
    from tests.judge.support import RUBRIC, case, cli

    rubric = RUBRIC + ("" if allows_na else "allows_na = false\n")
    (tmp_path / "r.toml").write_text(rubric)
    (tmp_path / "cases.jsonl").write_text(case("c1", "Ünïcode and words " * 300) + "\n")
    states = tmp_path / "states.jsonl"
    r = cli("build", str(tmp_path / "cases.jsonl"), str(states), "--rubrics",
            str(tmp_path / "r.toml"), "--exact-tokens", "--max-output-tokens", "700",
            "--max-tokens", "4000")
    assert r.returncode == 0, r.stderr
    record = json.loads(states.read_text())
    figures = record["exposure"]["tokens"]
    counted, reserved, name = figures["exact"], figures["reserved"], figures["tokenizer"]
    shown = cli("judge", str(states), str(tmp_path / "v.jsonl"), "--model", "gpt-4.1-mini",
                "--provider", provider, "--max-output-tokens", "700", "--show-request", "c1",
                "helpful")
    assert shown.returncode == 0, shown.stderr
    body = json.loads(shown.stdout)
    system, user, output, schema = _texts(body)
    # Each text the model reads is counted exactly: one rubric, so its system text is the
    # longest; the state is the user message.
    assert oracle_count(system, name) == counted["longest_question"]
    assert oracle_count(user, name) == counted["state"]
    assert user.encode() == json.dumps(record["state"], ensure_ascii=False,
                                       separators=(",", ":")).encode()
    # The answer's bound is the one the body carries; the framing holds OpenAI's documented
    # chat overhead and the schema the body asks for (na left out where not allowed).
    assert reserved["output"] == output == 700
    assert schema["properties"]["status"]["enum"] == (["pass", "fail", "na"] if allows_na
                                                      else ["pass", "fail"])
    overhead = 2 * 3 + oracle_count("system", name) + oracle_count("user", name) + 3
    assert reserved["framing"] >= overhead + oracle_count(json.dumps(
        schema, separators=(",", ":")), name)
    total = counted["total"] + reserved["framing"] + reserved["output"]
    assert total <= figures["budget"] == 4000
    # What the dry run counts of the same request is what the budget counts, but the bound.
    dry = cli("judge", str(states), str(tmp_path / "v.jsonl"), "--model", "gpt-4.1-mini",
              "--max-output-tokens", "700", "--dry-run", "--store", str(tmp_path / "s.sqlite"))
    assert f"input tokens: {total - 700:,} (" in dry.stdout, dry.stdout
