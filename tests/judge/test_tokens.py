"""Token counts of a request: the family's encoding where known, else an estimate that says
so; OpenAI's documented chat overhead; every count tiktoken's."""

from __future__ import annotations

import pytest

from evalstream._judge import tokens
from evalstream.errors import UsageError
from tests.helpers import oracle_count


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
                    + 3 + oracle_count("user", encoding) + oracle_count(user, encoding) + 3)
        assert tokens.request_tokens(system, user, encoding) == expected
    assert tokens.request_tokens(system, "not json {", encoding) == (
        9 + oracle_count("system", encoding) + oracle_count("user", encoding)
        + oracle_count(system, encoding) + oracle_count("not json {", encoding))
    assert tokens.count("<|endoftext|>", encoding) > 1  # read as text, not a special token
