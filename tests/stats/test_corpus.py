"""stats over every real dataset of the shared corpus: counts add up and agree with build."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from evalstream.dataset.stats import StatsOptions, collect
from evalstream.pipeline.build import Options, run
from tests.helpers import CORPUS

DATASETS = sorted(CORPUS.glob("*.jsonl"))
pytestmark = pytest.mark.skipif(not DATASETS, reason=f"no corpus at {CORPUS}")


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


@pytest.mark.parametrize("dataset", [*DATASETS[:2], CORPUS / "tau2bench.jsonl"],
                         ids=lambda d: d.stem)
@pytest.mark.parametrize("budget", [32_000, 2_000])
def test_sizer_agrees_with_build_case_by_case(dataset: Path, budget: int) -> None:
    # stats sizes states from each field's encoded size; build encodes every state. The
    # outcome of every (case, rubric) and the size of every written state must agree.
    from evalstream.dataset.rows import Sizer
    from evalstream.files.lines import Chunk, open_input, read_chunks
    from evalstream.pipeline.build import Processor, load_rubrics

    if not dataset.exists():
        pytest.skip(f"no {dataset}")
    processor = Processor(load_rubrics([]), budget, 256 << 20, False)
    sizer = Sizer(processor)
    compared = 0
    with open_input(str(dataset)) as stream:
        for item in read_chunks(stream):
            assert isinstance(item, Chunk)
            accepted, _ = processor.accept(item)
            for line, case in accepted[:40]:  # a sample of every chunk
                reasons, largest = sizer.outcomes(case)
                outcomes = list(processor.checks(case, line))
                assert reasons == tuple(o.reason for o in outcomes)
                written = [o.record.exposure.tokens.state for o in outcomes
                           if o.reason is None and o.rubric.kind == "judge"]
                if written and all(o.reason != "over budget" for o in outcomes):
                    assert largest == max(written)
                compared += 1
    assert compared > 50
