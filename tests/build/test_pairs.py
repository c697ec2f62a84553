"""build --pair-with (issue 28): two runs' cases aligned by id into pairwise states in both
orders, checked against a plain reading of the two files (the standard library's json)."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import xxhash
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstream._build import pairs
from evalstream._build.run import Options, run
from evalstream._checks.state import PAIR_PREAMBLE
from evalstream._checks.tokens import PAIR_FRAMING
from evalstream.errors import InputError, UsageError
from tests.checks.test_pairwise import plain_state
from tests.helpers import ROOT

RUBRIC = """
[[rubric]]
id = "better"
kind = "pairwise"
question = "Which response answers user_input better?"
shows = ["user_input", "assistant_response", "policy"]
"""
SHOWS = ["user_input", "response_1", "response_2", "policy"]


def write(path: Path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def runs(n: int, seed: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run A and run B of ``n`` ids: most in both, a few in one only, one with another input,
    one with another policy, ids sorted."""
    rng = random.Random(seed)
    a, b = [], []
    for i in range(n):
        case_id = f"q{i:04d}"
        shared = {"input": f"question {i}", "policy": "be kind"}
        if i % 7 != 3:
            a.append({"id": case_id, **shared, "output": "A says " + "x" * rng.randrange(20),
                      "expected": {"better": {"status": rng.choice(["pass", "fail"]),
                                             "source": "human"}}})
        if i % 11 != 5:
            other = dict(shared)
            if i % 13 == 1:
                other["input"] = "another question"
            if i % 17 == 2:
                other["policy"] = "be brief"
            b.append({"id": case_id, **other, "output": "B says " + "y" * rng.randrange(20),
                      "metadata": {"run": "B"}})
    return a, b


def expected_records(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What build must write, from the two runs as plain dicts: for each case of A (in A's
    order) with a case of the same id, input and policy in B, its two orders."""
    by_id = {c["id"]: c for c in b}
    out = []
    for ca in a:
        cb = by_id.get(ca["id"])
        if cb is None or (ca["input"], ca.get("policy")) != (cb["input"], cb.get("policy")):
            continue
        for order in ("ab", "ba"):
            out.append({"case_id": ca["id"], "order": order,
                        "state": plain_state(ca, cb, order, SHOWS),
                        "chars": [len(ca["output"]), len(cb["output"])]})
    return out


def check_records(path: Path, expected: list[dict[str, Any]]) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["case_id"], r["pair"]["order"], r["state"], r["pair"]["chars"]) for r in lines] \
        == [(e["case_id"], e["order"], e["state"], e["chars"]) for e in expected]
    for first, second in zip(lines[::2], lines[1::2], strict=True):
        assert first["pair"]["key"] == second["pair"]["key"] == xxhash.xxh3_128_hexdigest(
            (first["state_hash"] + second["state_hash"]).encode())
        assert first["question"] == second["question"] and \
            first["question"].startswith(PAIR_PREAMBLE)
    for record in lines:
        raw = json.dumps(record["state"], ensure_ascii=False, separators=(",", ":")).encode()
        assert xxhash.xxh3_128_hexdigest(raw) == record["state_hash"]
        # Issues 25 x 28: a pairwise answer has no `na`, and the budget holds back the
        # framing of its (longer) schema.
        assert record["allows_na"] is False
        tokens = record["exposure"]["tokens"]
        assert tokens["reserved"]["framing"] == PAIR_FRAMING[tokens["tokenizer"]]


def build_pairs(tmp: Path, a: list[str], b: list[str], name: str = "pairs.jsonl",
                **options: Any) -> tuple[Any, Path]:
    rubric = tmp / "pairwise.toml"
    rubric.write_text(RUBRIC)
    out = tmp / name
    report, _ = run(Options(input=write(tmp / "a.jsonl", a), output=str(out),
                            pair_with=write(tmp / "b.jsonl", b), rubric_files=[str(rubric)],
                            **options))
    return report, out


def test_pairs_against_a_plain_reading_with_every_kind_of_case_not_judged(tmp_path: Path) -> None:
    a, b = runs(120)
    lines_a = [json.dumps(c) for c in a]
    lines_b = [json.dumps(c) for c in b]
    lines_a.insert(5, "{not json")
    lines_a.insert(9, "")
    lines_b.insert(3, json.dumps({"id": "broken", "input": 1, "output": "x"}))
    lines_b.append(json.dumps(b[0]))  # a repeated id: rejected, never a second partner
    report, out = build_pairs(tmp_path, lines_a, lines_b)
    check_records(out, expected_records(a, b))
    assert all(json.loads(line)["exposure"]["never_shown"] == ["expected", "metadata"]
               for line in out.read_text().splitlines())
    p = report.pairs
    ids_a, ids_b = {c["id"] for c in a}, {c["id"] for c in b}
    assert p.read == "in step" and p.must_be_equal == ["input", "policy"]
    assert (p.a.only, p.b.only) == (len(ids_a - ids_b), len(ids_b - ids_a))
    assert p.a.cases == p.pairs + p.mismatched + p.a.only == len(a)
    assert p.b.cases == p.pairs + p.mismatched + p.b.only == len(b)
    assert p.pairs == len(expected_records(a, b)) // 2
    assert [(u.file, u.id) for u in p.unpaired] == \
        [("a", i) for i in sorted(ids_a - ids_b)] + [("b", i) for i in sorted(ids_b - ids_a)]
    assert all(set(m.fields) <= {"input", "policy"} and m.fields for m in p.mismatches)
    c = report.counts
    assert c.lines == c.blank + c.cases + c.rejected == len(lines_a) + len(lines_b)
    assert (c.checks, c.skipped) == (2 * p.pairs, 0)
    rejects = [json.loads(line) for line in
               (tmp_path / "pairs.rejects.jsonl").read_text().splitlines()]
    assert [(r["file"], r["line"]) for r in rejects] == \
        [(str(tmp_path / "a.jsonl"), 6), (str(tmp_path / "b.jsonl"), 4),
         (str(tmp_path / "b.jsonl"), len(lines_b))]
    assert report.exit_code == 1  # lines were rejected
    assert any("no case of the same id" in w for w in report.warnings)
    saved = json.loads((tmp_path / "pairs.report.json").read_text())
    assert saved["pairs"]["pairs"] == p.pairs and saved["counts"]["checks"] == c.checks


def test_the_same_bytes_in_step_and_with_an_index(tmp_path: Path) -> None:
    a, b = runs(200, seed=3)
    shuffled = list(b)
    random.Random(1).shuffle(shuffled)
    sorted_a = [json.dumps(c) for c in a]
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    first, out1 = build_pairs(tmp_path / "x", sorted_a, [json.dumps(c) for c in b])
    second, out2 = build_pairs(tmp_path / "y", sorted_a, [json.dumps(c) for c in shuffled])
    assert (first.pairs.read, second.pairs.read) == ("in step", "indexed")
    assert out1.read_bytes() == out2.read_bytes()
    # Run A's unpaired cases and the mismatches by A's lines; run B's by its own lines.
    assert [u for u in first.pairs.unpaired if u.file == "a"] == \
        [u for u in second.pairs.unpaired if u.file == "a"]
    assert sorted(u.id for u in first.pairs.unpaired if u.file == "b") == \
        sorted(u.id for u in second.pairs.unpaired if u.file == "b")
    assert [(m.id, m.line_a, m.fields) for m in first.pairs.mismatches] == \
        [(m.id, m.line_a, m.fields) for m in second.pairs.mismatches]


@pytest.mark.parametrize("compressed", [".gz", ".zst"])
def test_a_compressed_unsorted_run_b_is_read_through_a_copy(tmp_path: Path,
                                                            compressed: str) -> None:
    a, b = runs(60, seed=5)
    random.Random(2).shuffle(b)
    report, plain = build_pairs(tmp_path, [json.dumps(c) for c in a], [json.dumps(c) for c in b])
    data = "".join(json.dumps(c) + "\n" for c in b).encode()
    packed = tmp_path / f"b.jsonl{compressed}"
    packed.write_bytes(gzip.compress(data) if compressed == ".gz"
                       else zstandard.ZstdCompressor().compress(data))
    out = tmp_path / "packed.jsonl"
    again, _ = run(Options(input=str(tmp_path / "a.jsonl"), output=str(out),
                           pair_with=str(packed), rubric_files=[str(tmp_path / "pairwise.toml")]))
    assert again.pairs.read == "indexed" and out.read_bytes() == plain.read_bytes()


def test_a_file_out_of_order_after_the_held_output_is_rewound(tmp_path: Path,
                                                             monkeypatch: Any) -> None:
    a, b = runs(80, seed=7)
    reference = tmp_path / "ref"
    reference.mkdir()
    _, expected = build_pairs(reference, [json.dumps(c) for c in a], [json.dumps(c) for c in b])
    late = b[:-3] + [b[-1], b[-2], b[-3]]  # sorted but for its last lines
    monkeypatch.setattr(pairs, "HOLD_BYTES", 1)  # every pair written at once
    monkeypatch.setattr(pairs, "FLUSH_BYTES", 1)
    report, out = build_pairs(tmp_path, [json.dumps(c) for c in a], [json.dumps(c) for c in late])
    assert report.pairs.read == "indexed" and out.read_bytes() == expected.read_bytes()
    # A target that cannot be rewound: a sentence that says to sort, and nothing written.
    with pytest.raises(InputError, match=r"b.jsonl is sorted by case id up to line .* sort "
                                         r"both files by id"):
        build_pairs(tmp_path, [json.dumps(c) for c in a], [json.dumps(c) for c in late],
                    name="pairs.jsonl.zst")
    assert not (tmp_path / "pairs.jsonl.zst").exists()


ids = st.lists(st.sampled_from([f"k{i}" for i in range(12)]), unique=True, max_size=12)


@pytest.mark.slow
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(in_a=ids, in_b=ids, order=st.randoms(use_true_random=False),
       differ=st.sets(st.sampled_from([f"k{i}" for i in range(12)])))
def test_any_two_runs_pair_exactly_the_ids_both_hold_alike(
        tmp_path_factory: Any, in_a: list[str], in_b: list[str], order: random.Random,
        differ: set[str]) -> None:
    a = [{"id": i, "input": f"q {i}", "output": f"A {i}"} for i in in_a]
    b = [{"id": i, "input": f"q {i}" + (" (other)" if i in differ else ""), "output": f"B {i}"}
         for i in in_b]
    order.shuffle(b)
    tmp = tmp_path_factory.mktemp("pairs")
    report, out = build_pairs(tmp, [json.dumps(c) for c in a], [json.dumps(c) for c in b])
    check_records(out, expected_records(a, b))
    both = set(in_a) & set(in_b)
    assert report.pairs.mismatched == len(both & differ)
    assert report.pairs.pairs == len(both - differ)


@pytest.mark.slow
def test_run_a_from_stdin_and_the_summary(tmp_path: Path) -> None:
    a, b = runs(30, seed=11)
    (tmp_path / "pairwise.toml").write_text(RUBRIC)
    write(tmp_path / "b.jsonl", [json.dumps(c) for c in b])
    data = "".join(json.dumps(c) + "\n" for c in a)
    done = subprocess.run([sys.executable, "-m", "evalstream", "build", "-", "out.jsonl",
                           "--pair-with", "b.jsonl", "--rubrics", "pairwise.toml"],
                          input=data, capture_output=True, text=True, cwd=tmp_path,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    check_records(tmp_path / "out.jsonl", expected_records(a, b))
    assert "pairs: " in done.stderr and "each judged in both orders" in done.stderr


@pytest.mark.parametrize(("options", "message"), [
    ({"engine": "dask"}, "drop --engine dask"),
    ({"rubric_files": []}, r"the built-in rubrics are judged one case at a time"),
    ({"pointwise": True}, r"`helpful` is judged one case at a time: build them over each run"),
])
def test_what_pair_with_refuses(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    rubric = tmp_path / "r.toml"
    rubric.write_text(RUBRIC + ("\n[[rubric]]\nid = \"helpful\"\nquestion = \"ok?\"\nshows = "
                                "[\"assistant_response\"]\n" if options.pop("pointwise", False)
                                else ""))
    given = {"rubric_files": [str(rubric)], **options}
    with pytest.raises(UsageError, match=message):
        run(Options(input=write(tmp_path / "a.jsonl", []), output=str(tmp_path / "o.jsonl"),
                    pair_with=write(tmp_path / "b.jsonl", []), **given))


def test_both_runs_from_stdin_are_refused_naming_the_two_arguments(tmp_path: Path) -> None:
    rubric = tmp_path / "r.toml"
    rubric.write_text(RUBRIC)
    with pytest.raises(UsageError, match=r"the input and --pair-with are both - \(stdin\)"):
        run(Options(input="-", output=str(tmp_path / "o.jsonl"), pair_with="-",
                    rubric_files=[str(rubric)]))


def test_workers_are_one_process_with_a_warning_and_a_pairwise_rubric_alone_warns(
        tmp_path: Path) -> None:
    a, b = runs(10)
    report, _ = build_pairs(tmp_path, [json.dumps(c) for c in a], [json.dumps(c) for c in b],
                            workers=3)
    assert report.warnings[0].startswith("--workers: --pair-with reads two files")
    alone, _ = run(Options(input=str(tmp_path / "a.jsonl"), output=str(tmp_path / "one.jsonl"),
                           rubric_files=[str(tmp_path / "pairwise.toml")]))
    assert alone.skipped["better"] == {"pairwise": len(a)}
    assert any("`better` is a pairwise rubric" in w for w in alone.warnings)
    assert (tmp_path / "one.jsonl").read_bytes() == b""
