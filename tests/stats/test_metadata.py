"""Metadata keys: nested paths, distinct values exact up to the cap, then estimated, in
bounded memory; too many keys are counted, not kept."""

from __future__ import annotations

import json
from pathlib import Path

from evalstream._stats import rows as stats
from evalstream._stats.stats import StatsOptions, collect


def _write(tmp_path: Path, metadata: list[dict[str, object]]) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps({"id": f"c{i}", "input": "q", "output": "a",
                                        "metadata": m}) + "\n" for i, m in enumerate(metadata)))
    return path


def test_key_paths_values_and_caps(tmp_path: Path) -> None:
    n = 3_000
    path = _write(tmp_path, [{
        "user": f"user-{i}", "scenario": "ab"[i % 2], "n": i % 3, "flag": i % 2 == 0,
        "deep": {"a": {"b": {"c": 1}}}, "long": "x" * 300 + str(i % 2), "tags": ["t", i % 2],
    } for i in range(n)])
    keys = {k.key: k for k in collect(StatsOptions(input=str(path))).metadata.keys}
    assert set(keys) == {"user", "scenario", "n", "flag", "deep", "deep.a", "deep.a.b", "long",
                         "tags"}
    user = keys["user"]
    assert user.cases == n and not user.distinct_exact and user.top is None
    assert abs(user.distinct - n) < 0.1 * n  # an estimate past the cap of 1,000
    assert keys["scenario"].distinct_exact and keys["scenario"].distinct == 2
    assert [(v.value, v.cases) for v in keys["scenario"].top or []] == [("a", 1500), ("b", 1500)]
    assert [(v.value, v.cases) for v in keys["n"].top or []] == [("0", 1000), ("1", 1000),
                                                                 ("2", 1000)]
    assert {v.value for v in keys["flag"].top or []} == {"true", "false"}
    assert keys["deep"].objects == keys["deep.a"].objects == n
    assert [v.value for v in keys["deep.a.b"].top or []] == ['{"c":1}']  # the depth limit
    assert {v.value for v in keys["tags"].top or []} == {'["t",0]', '["t",1]'}
    long_values = [v.value for v in keys["long"].top or []]
    assert len(long_values) == 2 and all(len(v) < 230 and "… #" in v for v in long_values)
    assert len(set(long_values)) == 2  # cut to the same prefix, still told apart


def test_the_exact_values_are_dropped_past_the_cap(tmp_path: Path) -> None:
    counter = stats.MetadataKeys()
    for i in range(stats.DISTINCT_CAP + 10):
        counter.add({"user": f"u{i}", "scenario": "x"})
    assert counter.values["user"] is None  # memory: only the fixed-size sketch is left
    assert counter.values["scenario"] == {"x": stats.DISTINCT_CAP + 10}


def test_too_many_keys_are_counted_not_kept(tmp_path: Path) -> None:
    path = _write(tmp_path, [{f"k{i}-{j}": 1 for j in range(10)} for i in range(120)])
    result = collect(StatsOptions(input=str(path)))
    assert len(result.metadata.keys) == stats.KEYS_CAP
    assert result.metadata.keys_dropped == 1_200 - stats.KEYS_CAP
    assert any("more than 1,000 distinct key paths" in w for w in result.warnings)


def test_group_values_of_every_type(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"scenario": "a"}, {"scenario": 3}, {"scenario": None},
                             {"scenario": True}, {"other": 1}, {"scenario": {"x": 1}}])
    result = collect(StatsOptions(input=str(path)))
    assert sorted(g.key["scenario"] for g in result.groups) == sorted(
        ["a", "3", "null", "true", "(missing)", '{"x":1}'])
    assert result.overview.by["scenario"].missing == 1
    assert result.overview.by["scenario"].distinct == 5
