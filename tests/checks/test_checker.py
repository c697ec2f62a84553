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


PAIRS_TOML = """
[[rubric]]
id = "better"
kind = "pairwise"
question = "Which response answers user_input better?"
shows = ["user_input", "assistant_response", "reference_material"]

[[rubric]]
id = "responses"
kind = "pairwise"
question = "Which response is kinder?"
shows = ["assistant_response"]

[[rubric]]
id = "grounded"
question = "Is assistant_response grounded in reference_material?"
shows = ["reference_material", "assistant_response"]

[[rubric]]
id = "alone"
question = "Is the policy followed?"
shows = ["policy"]
"""


@pytest.mark.slow  # the oracle's tables
def test_pairwise_states_and_list_items_counted_exactly_equal_their_whole_text() -> None:
    """Pairwise states (both orders, the shared fields encoded once), a reference list cut
    at its items' ids inside a segment, and a field shown alone: every state's exact count
    is tiktoken's count of its whole text."""
    tokenizer = "o200k_base"
    checker = Checker(_set(PAIRS_TOML), tokenizer=tokenizer, exact_tokens=True)
    checker.budget._pieces = tokens.PieceCounts(encodings.tokenizer(tokenizer))
    context = [{"id": f"p{i}", "text": f"Passage {i}: parcels ship in {i} days. " * 40}
               for i in range(4)]
    a = case(input="Where is my parcel?" * 30, output="On its way.\n" * 200, context=context,
             policy="Be kind. " * 10)
    b = case(input="Where is my parcel?" * 30, output="It is late, sorry " * 90,
             context=context, policy="Be kind. " * 10)
    ab, ba = checker.check_pair(a, b, 1)
    alone = checker.check(a, 2)
    states = 0
    for check in (*ab, *ba, *alone):
        if check.reason is not None:
            continue
        assert check.tokens is not None and check.tokens.exact is not None
        assert check.state is not None
        assert check.tokens.exact.state == len(oracle(tokenizer).encode_ordinary(
            check.state.decode()))
        states += 1
    assert states == 2 * 2 + 2
