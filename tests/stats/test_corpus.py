"""stats over every real dataset of the shared corpus: counts add up and agree with build."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from evalstream._build.run import Options, run
from evalstream._stats.stats import StatsOptions, collect
from tests.helpers import CORPUS

DATASETS = sorted(CORPUS.glob("*.jsonl"))
pytestmark = pytest.mark.skipif(not DATASETS, reason=f"no corpus at {CORPUS}")


@pytest.mark.slow
@pytest.mark.parametrize("dataset", DATASETS, ids=[d.stem for d in DATASETS])
def test_counts_add_up_and_agree_with_build(dataset: Path, tmp_path: Path) -> None:
    s = collect(StatsOptions(input=str(dataset)))
    o = s.overview
    assert o.lines == o.blank + o.cases + o.rejected
    assert o.bytes == dataset.stat().st_size
    assert sum(g.cases for g in s.groups) == s.total.cases == o.cases
    for field, n in s.total.fields.items():
        assert sum(g.fields[field] for g in s.groups) == n
    assert sum(g.tool_events for g in s.groups) == s.total.tool_events
    assert sum(g.over_budget for g in s.groups) == s.total.over_budget

    report, _ = run(Options(input=str(dataset), output=str(tmp_path / "states.jsonl")))
    assert (o.lines, o.cases, o.rejected, o.blank) == (
        report.counts.lines, report.counts.cases, report.counts.rejected, report.counts.blank)
    assert {c.rubric: c.checks for c in s.checks} == report.checks_by_rubric
    assert {c.rubric: c.skipped for c in s.checks if c.skipped} == report.skipped
    assert s.total.checks == report.counts.checks
    assert s.total.over_budget == sum(r.get("over budget", 0) for r in report.skipped.values())
    assert s.total.over_budget >= len(report.over_budget)

    # Labels, counted plainly from the file.
    labels: Counter[tuple[str, str, str]] = Counter()
    for line in dataset.read_bytes().splitlines():
        for rubric, label in (json.loads(line).get("expected") or {}).items():
            labels[rubric, label["source"], label["status"]] += 1
    got = Counter({(r.rubric, src, st): n for r in s.labels
                   for src, by in r.total.source.items() for st, n in by.items() if n})
    assert got == labels
    for r in s.labels:
        assert r.total.labelled + r.total.not_applicable == r.total.labels
        assert r.total.labelled <= r.total.applies


@pytest.mark.slow
@pytest.mark.parametrize("dataset", [*DATASETS[:2], CORPUS / "tau2bench.jsonl"],
                         ids=lambda d: d.stem)
def test_a_tight_budget_agrees_with_build(dataset: Path, tmp_path: Path) -> None:
    # At 800 tokens many states are over budget: both commands must skip the same checks.
    if not dataset.exists():
        pytest.skip(f"no {dataset}")
    s = collect(StatsOptions(input=str(dataset), max_tokens=800))
    report, _ = run(Options(input=str(dataset), output=str(tmp_path / "states.jsonl"),
                            max_tokens=800))
    assert {c.rubric: c.checks for c in s.checks} == report.checks_by_rubric
    assert {c.rubric: c.skipped for c in s.checks if c.skipped} == report.skipped
    assert s.total.over_budget == sum(r.get("over budget", 0) for r in report.skipped.values())
    assert s.total.over_budget > 0
    # The largest state stats saw is at least the largest state build wrote.
    written = [json.loads(line)["exposure"].get("tokens", {}).get("state", 0)
               for line in (tmp_path / "states.jsonl").read_text().splitlines()]
    assert s.total.state_tokens is not None and s.total.state_tokens.max >= max(written, default=0)
