"""The stats figures of the sample dataset, checked against a plain computation (plain.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalstream._stats import rows as stats_rows
from evalstream._stats.stats import DatasetStats, StatsOptions, collect
from tests.helpers import SAMPLES, oracle_count
from tests.stats import plain

CASES = SAMPLES / "cases.jsonl"


@pytest.fixture(scope="module")
def result() -> DatasetStats:
    return collect(StatsOptions(input=str(CASES)))


def _as_dict(group: object) -> dict[str, object]:
    import msgspec

    data = msgspec.to_builtins(group)
    assert isinstance(data, dict)
    return data


def test_overview_counts_every_line_and_byte(result: DatasetStats) -> None:
    o = result.overview
    lines = CASES.read_bytes().count(b"\n")
    assert (o.lines, o.cases, o.rejected, o.blank) == (lines, 48, 0, 0)
    assert o.bytes == CASES.stat().st_size
    assert o.groups == 7 and o.by["scenario"].distinct == 7 and o.by["scenario"].missing == 0
    assert result.exit_code == 0


def test_groups_match_a_plain_computation(result: DatasetStats) -> None:
    expected = plain.by_scenario(CASES)
    got = {g.key["scenario"]: _as_dict(g) for g in result.groups}
    got["(all)"] = _as_dict(result.total)
    assert set(got) == set(expected)
    for name, figures in expected.items():
        for field, value in figures.items():
            assert got[name][field] == pytest.approx(value, abs=0.011), (name, field)


def test_groups_are_ordered_by_size_and_add_up(result: DatasetStats) -> None:
    sizes = [g.cases for g in result.groups]
    assert sizes == sorted(sizes, reverse=True)
    assert sum(sizes) == result.total.cases == result.overview.cases
    assert sum(g.checks for g in result.groups) == result.total.checks


def test_labels_match_a_plain_computation(result: DatasetStats) -> None:
    expected = plain.labels(CASES)
    got = {r.rubric: r for r in result.labels}
    assert list(got) == list(expected)  # rubric-set order
    for rubric, want in expected.items():
        total = got[rubric].total
        assert total.labels == want["labels"]
        assert {k: v for k, v in total.status.items() if v} == want["status"]
        assert {(src, st): n for src, by in total.source.items() for st, n in by.items() if n} \
            == want["source"]
        assert (total.applies, total.labelled, total.not_applicable) == \
            (want["applies"], want["labelled"], want["not_applicable"])
        assert total.coverage == pytest.approx(want["labelled"] / want["applies"], abs=1e-4)


def test_labels_per_group_add_up_to_the_total(result: DatasetStats) -> None:
    for r in result.labels:
        assert sum(g.counts.labels for g in r.groups) == r.total.labels
        assert sum(g.counts.applies for g in r.groups) == r.total.applies
        for status in ("pass", "fail", "na"):
            assert sum(g.counts.status[status] for g in r.groups) == r.total.status[status]


def test_checks_match_the_rubric_rules_and_build(result: DatasetStats, tmp_path: Path) -> None:
    rows = plain.cases(CASES)
    for check in result.checks:
        n = sum(1 for c in rows if plain.applies(c, check.rubric))
        assert (check.applies, check.checks) == (n, n)
        assert sum(check.skipped.values()) == len(rows) - n
    from tests.helpers import build

    report, _ = build(tmp_path, CASES.read_bytes())
    assert {c.rubric: c.checks for c in result.checks} == report.checks_by_rubric
    assert {c.rubric: c.skipped for c in result.checks if c.skipped} == report.skipped


def test_metadata_keys_match_a_plain_walk(result: DatasetStats) -> None:
    expected = plain.metadata_keys(CASES)
    got = {k.key: k for k in result.metadata.keys}
    assert set(got) == set(expected)
    for key, (n, values) in expected.items():
        assert got[key].cases == n
        assert got[key].distinct_exact
        if got[key].objects < n:
            assert got[key].distinct == len(values), key
    scenario = got["scenario"]
    assert scenario.top is not None
    assert [(v.value, v.cases) for v in scenario.top][:3] == [
        ("booking", 11), ("rag", 8), ("refund", 7)]
    assert got["source"].objects == got["source"].cases == 20
    assert result.metadata.cases == 48


def test_histograms_count_every_case(result: DatasetStats) -> None:
    rows = plain.cases(CASES)
    h = result.histograms["input_chars"]
    assert sum(h.counts) == len(rows)
    for i, lo in enumerate(h.edges):
        hi = h.edges[i + 1] if i + 1 < len(h.edges) else float("inf")
        assert h.counts[i] == sum(1 for c in rows if lo <= len(c["input"]) < hi)


def test_batches_do_not_change_the_result(monkeypatch: pytest.MonkeyPatch,
                                          result: DatasetStats) -> None:
    # Rows become frames every BATCH_ROWS cases; tiny batches must give the same figures.
    monkeypatch.setattr(stats_rows, "BATCH_ROWS", 5)
    assert collect(StatsOptions(input=str(CASES))) == result


def test_grouping_by_two_keys_and_a_nested_key() -> None:
    two = collect(StatsOptions(input=str(CASES), by=["scenario", "split"]))
    rows = plain.cases(CASES)
    pairs: dict[tuple[str, str], int] = {}
    for c in rows:
        m = c.get("metadata") or {}
        key = (m.get("scenario", "(missing)"), m.get("split", "(missing)"))
        pairs[key] = pairs.get(key, 0) + 1
    assert {(g.key["scenario"], g.key["split"]): g.cases for g in two.groups} == pairs
    assert two.overview.by["split"].missing == sum(n for k, n in pairs.items()
                                                    if k[1] == "(missing)")
    nested = collect(StatsOptions(input=str(CASES), by=["source.kind"]))
    kinds: dict[str, int] = {}
    for c in rows:
        kind = ((c.get("metadata") or {}).get("source") or {}).get("kind", "(missing)")
        kinds[kind] = kinds.get(kind, 0) + 1
    assert {g.key["source.kind"]: g.cases for g in nested.groups} == kinds


@pytest.mark.parametrize("tokenizer", ["o200k_base", "cl100k_base"])
def test_exact_token_counts_match_tiktoken(tokenizer: str) -> None:
    # A budget below the longest question's size in bytes: some states fit, some do not;
    # every figure is tiktoken's exact count, in the tokenizer asked for. The budget holds
    # back the request's framing and the answer's bound (issue 25).
    import numpy as np

    asked = plain.questions()
    budget, output = 600, 8
    held = plain.framing(tokenizer) + output
    assert max(len(q.encode()) for q in asked.values()) > budget
    longest = max(oracle_count(q, tokenizer) for q in asked.values())
    largest, over, judge_tokens = [], 0, 0
    for case in plain.cases(CASES):
        counts = []
        for rubric, rule in plain.BUILTIN.items():
            if rule["shows"] and plain.applies(case, rubric):
                n = oracle_count(plain.state_text(case, rubric), tokenizer)
                counts.append(n)
                if n + longest + held > budget:
                    over += 1
                else:
                    judge_tokens += n + oracle_count(asked[rubric], tokenizer) + \
                        plain.framing(tokenizer)
        if counts:
            largest.append(max(counts))
    result = collect(StatsOptions(input=str(CASES), max_tokens=budget, tokenizer=tokenizer,
                                  max_output_tokens=output))
    assert result.tokenizer == tokenizer
    assert 0 < over < sum(c.applies for c in result.checks)  # some fit, some do not
    assert result.total.over_budget == over
    assert result.total.judge_tokens == judge_tokens
    assert result.total.state_tokens.max == max(largest)
    assert result.total.state_tokens.median == pytest.approx(float(np.median(largest)), abs=0.01)
    assert result.total.state_tokens.p95 == pytest.approx(float(np.percentile(largest, 95)),
                                                          abs=0.011)
    assert {c.rubric: c.question_tokens for c in result.checks} == {
        r: (oracle_count(asked[r], tokenizer) if r in asked else None) for r in plain.BUILTIN}
