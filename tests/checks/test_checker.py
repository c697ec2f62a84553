"""The Checker counting every state exactly (stats, --exact-tokens): each field's segment once
a case, every state's count tiktoken's count of its whole text."""

from __future__ import annotations

import pytest

from evalstream._checks import encodings, tokens
from evalstream._checks.checker import Checker
from tests.checks.test_pairwise import _set, case
from tests.helpers import oracle

SHARING_TOML = "".join(f"""
[[rubric]]
id = "r{i}"
question = "Is it right?"
shows = {shows}
""" for i, shows in enumerate([
    '["user_input", "assistant_response"]', '["assistant_response"]',
    '["user_input", "policy"]', '["user_input", "assistant_response", "policy"]',
    '["policy"]', '["user_input"]']))


@pytest.mark.slow  # the oracle's tables: ~0.6 s alone
@pytest.mark.parametrize("tokenizer", ["o200k_base", "cl100k_base"])
def test_every_state_counted_exactly_equals_its_whole_text_when_rubrics_share_fields(
        tokenizer: str) -> None:
    """stats and --exact-tokens count each field's segment once a case and sum them: every
    state's count is still tiktoken's count of the state, whether the field is first, in the
    middle or last, and whatever other rubrics showed it before."""
    checker = Checker(_set(SHARING_TOML), tokenizer=tokenizer, exact_tokens=True)
    checker.budget._pieces = tokens.PieceCounts(encodings.tokenizer(tokenizer))  # its own
    for i in range(3):
        c = case(id=f"c{i}", input=f"Where is my parcel {i}?" * 40,
                 output=f"On its way, {i} days.\n" * 60, policy=f"Be kind; {{don't}} lie {i}. " * 80)
        for check in checker.check(c, 1 + i):
            assert check.reason is None and check.tokens is not None and check.state is not None
            assert check.tokens.exact is not None
            assert check.tokens.exact.state == len(oracle(tokenizer).encode_ordinary(
                check.state.decode()))
    # Ten fields in six states a case, seven segments: {"user_input" (first, or alone),
    # "assistant_response" (first and alone, in the middle, last), "policy" (last, alone).
    assert checker.budget.pieces.lookups == 3 * 7
