"""The view index against an independent reading: every list equals what the standard
library's json and plain dicts say it must hold (the skipped checks equal what build
skips), every line is counted, every reject is explained again exactly as the read loop
explained it, and the index stays a few dozen bytes a line."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstream._build.run import Options as BuildOptions
from evalstream._build.run import run as build
from evalstream._cases.ids import IdIndex
from evalstream._cases.reading import RecordReader, case_kind
from evalstream._cases.rejects import Reject
from evalstream._checks.rubrics import load_rubrics
from evalstream._files.lines import open_input, read_chunks
from evalstream._verdicts.records import DuplicateKeyError, verdict_kind
from evalstream._view.lists import Filters
from evalstream._view.records import FileChanged
from evalstream.errors import InputError, UsageError, WrongFileError
from tests.helpers import SAMPLES
from tests.view import plain
from tests.view.support import CASES, VERDICTS, VERDICTS_B, entries, site

RUBRICS = """
[[rubric]]
id = "r-any"
question = "Is assistant_response polite? Answer pass or fail."
shows = ["user_input", "assistant_response"]

[[rubric]]
id = "r-policy"
question = "Does assistant_response follow policy? Answer pass or fail."
shows = ["assistant_response", "policy"]
requires = ["policy"]

[[rubric]]
id = "r-when"
question = "Is assistant_response short? Answer pass or fail."
shows = ["assistant_response"]
when = { scenario = ["a"] }
"""


def built_skips(cases: Path, tmp: Path, rubric_files: list[str] | None = None,
                max_tokens: int = 32_000) -> tuple[set[tuple[str, str]], dict[str, Any]]:
    """The (case, rubric) keys build writes for these cases, and its report's skips."""
    out = tmp / "built.states.jsonl"
    report, _ = build(BuildOptions(input=str(cases), output=str(out),
                                   rubric_files=rubric_files or [], max_tokens=max_tokens,
                                   rejects=str(tmp / "built.rejects.jsonl"),
                                   report=str(tmp / "built.report.json")))
    records = [json.loads(line) for line in out.read_text().split("\n") if line.strip()]
    written = {(r["case_id"], r["rubric_id"]) for r in records}
    return written, json.loads((tmp / "built.report.json").read_text())


def check_skipped(s: Any, p: plain.Plain, cases: Path, tmp: Path,
                  rubric_files: list[str] | None = None) -> None:
    """The skipped list: build's skips (every rubric of the set build did not write for a
    case it accepted), judge states without a verdict, labels without a verdict."""
    written, report = built_skips(cases, tmp, rubric_files)
    rubrics = load_rubrics(rubric_files).ids
    by_build = {(c, r) for c in p.cases for r in rubrics if (c, r) not in written}
    found = entries(s, "skipped")
    assert len(found) == len(set(found))
    assert {(c, r) for c, r, k in found if k not in ("not judged", "labelled, no verdict")} \
        == by_build
    extra = {e for e in plain.skipped_extra(p) if e[:2] not in by_build}
    assert {e for e in found if e[2] in ("not judged", "labelled, no verdict")} == extra
    counted: dict[str, dict[str, int]] = {}
    for _, r, k in found:
        if k not in ("not judged", "labelled, no verdict"):
            counted.setdefault(r, {}).setdefault(k, 0)
            counted[r][k] += 1
    assert counted == {r: dict(v) for r, v in report["skipped"].items() if v}
    # Over budget, then not judged, then labels without a verdict, then the others by name.
    rank = {"over budget": 0, "not judged": 1, "labelled, no verdict": 2}
    keys = [(rank.get(k, 3), "" if k in rank else k) for _, _, k in found]
    assert keys == sorted(keys)


def check_counts(s: Any, paths: dict[str, Path]) -> None:
    for role, path in paths.items():
        f = s.index.files[role]
        assert (f.lines, f.blank) == plain.count_lines(path)
        assert f.lines == f.blank + f.records + f.rejected


def test_the_sample_lists_equal_a_plain_reading(tmp_path: Path) -> None:
    with site(compare=str(VERDICTS_B)) as s:
        p = plain.read(CASES, VERDICTS, VERDICTS_B)
        assert entries(s, "disagreements") == plain.disagreements(p)
        assert entries(s, "unscored") == plain.unscored(p)
        assert entries(s, "verdicts") == plain.everything(p)
        assert entries(s, "flips") == plain.flips(p)
        check_skipped(s, p, CASES, tmp_path)
        check_counts(s, {"cases": CASES, "verdicts": VERDICTS, "compare": VERDICTS_B})
        # The figures agree reports for the same files (another implementation, with Polars).
        from evalstream._verdicts.agree import AgreeOptions
        from evalstream._verdicts.agree import run as agree

        report = agree(AgreeOptions(str(VERDICTS), str(CASES)))
        assert len(s.lists["disagreements"]) == sum(
            r.all.confusion.fail_pass + r.all.confusion.pass_fail + r.all.na_verdicts
            for r in report.rubrics)
        assert len(s.lists["unscored"]) == report.verdicts.by_status["unscored"]
        # The overview's coverage is agree's, rubric by rubric (issue 25).
        from evalstream._view.coverage import by_rubric

        assert {name: (c, a) for name, c, a in by_rubric(s.index)} == {
            r.rubric: (r.all.coverage, r.all.accuracy) for r in report.rubrics
            if r.all.coverage and r.all.coverage.labels}


def test_filters_select_exactly_the_matching_entries() -> None:
    with site(compare=str(VERDICTS_B)) as s:
        p = plain.read(CASES, VERDICTS, VERDICTS_B)
        groups = {c: (case.get("metadata") or {}).get("scenario") for c, case in p.cases.items()}
        for name in s.lists.available():
            every = entries(s, name)
            lst = s.lists[name]
            for rubric, n in lst.counts(s.index, "rubric"):
                chosen = entries(s, name, Filters(rubric=rubric))
                assert chosen == [e for e in every if e[1] == rubric] and len(chosen) == n
            for kind, n in lst.counts(s.index, "kind"):
                chosen = entries(s, name, Filters(kind=kind))
                assert chosen == [e for e in every if e[2] == kind] and len(chosen) == n
            for source, _ in lst.counts(s.index, "source"):
                want = [e for e in every
                        if p.labels.get(e[:2], (None, "no label"))[1] == source]
                assert entries(s, name, Filters(source=source)) == want
            for group, _ in lst.counts(s.index, "group"):
                want = [e for e in every if e[0] in p.cases and
                        (groups[e[0]] if groups[e[0]] is not None else "(missing)") == group]
                assert entries(s, name, Filters(group=group)) == want
            assert entries(s, name, Filters(case="case-02")) == [e for e in every
                                                                  if e[0] == "case-02"]
            both = Filters(rubric="tool-backed-claims", case="case-02")
            assert entries(s, name, both) == [e for e in every if e[:2] == ("case-02",
                                                                            "tool-backed-claims")]
            # A value the list cannot have selects nothing, said as None.
            assert lst.select(s.index, Filters(rubric="no-such-rubric")) is None
            assert lst.select(s.index, Filters(case="no-such-case")) is None


def all_rejects(path: Path, kind: Any, max_line_bytes: int) -> list[Reject]:
    reader = RecordReader(kind, max_line_bytes)
    with open_input(str(path)) as stream:
        return [r for r in reader.read(read_chunks(stream, max_line_bytes))
                if type(r) is Reject]


HOSTILE_VERDICT_LINES = [
    b'{"case_id": "case-01", "rubric_id": "tool-backed-claims"}',  # no status, no state
    b'{"case_id": "case-01", "rubric_id": "x", "status": "maybe"}',
    b"not json at all",
    b'{"case_id": "case 01", "rubric_id": "x", "status": "pass"}',
    b"[1, 2]",
    b'{"case_id": "c", "rubric_id": "r", "status": "pass"} trailing',
    b"\xef\xbb\xbf{\"case_id\": \"c\"}",
    b'{"case_id": "' + b"x" * 300 + b'", "rubric_id": "r", "status": "pass"}',
]


@pytest.mark.parametrize("max_line_bytes", [256 << 20, 200])
def test_every_reject_is_explained_again_exactly_as_the_read_loop_did(
        tmp_path: Path, max_line_bytes: int) -> None:
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_bytes(b"\xef\xbb\xbf" + VERDICTS.read_bytes().replace(b"\n", b"\r\n", 3)
                         + b"\n".join(HOSTILE_VERDICT_LINES) + b"\n\n  \n")
    cases = tmp_path / "cases.jsonl"
    cases.write_bytes((SAMPLES / "bad.jsonl").read_bytes() + CASES.read_bytes()
                      + CASES.read_bytes()[:500] + b"\n")  # duplicates and a cut line
    with site(verdicts, cases, max_line_bytes=max_line_bytes) as s:
        theirs = [("cases", r) for r in all_rejects(cases, case_kind(False, IdIndex()),
                                                    max_line_bytes)]
        theirs += [("verdicts", r) for r in all_rejects(verdicts, verdict_kind(),
                                                        max_line_bytes)]
        mine = [s.source.reject(i) for i in range(len(s.index.rejects))]
        assert mine == theirs
        assert len(mine) > 20 + len(HOSTILE_VERDICT_LINES) - 1
        kinds = {k for k, _ in s.lists.rejects.counts("kind")}
        assert "malformed JSON" in kinds
        # With 200 bytes a line, the long sample cases are too long to be repeated ids.
        assert ("line too long" if max_line_bytes == 200 else "duplicate id") in kinds
        check_counts(s, {"cases": cases, "verdicts": verdicts})
        by_file = dict(s.lists.rejects.counts("file"))
        assert by_file == {"cases": s.index.files["cases"].rejected,
                           "verdicts": s.index.files["verdicts"].rejected}


# -- generated datasets ----------------------------------------------------------------------------
IDS = [f"c{i}" for i in range(8)] + ["ünï-cödé", "a\u202eb"]
RUBRIC_IDS = ["r-any", "r-policy", "r-when", "r-other"]
status = st.sampled_from(plain.STATUSES)
label = st.fixed_dictionaries({"status": st.sampled_from(["pass", "fail", "na"]),
                               "source": st.sampled_from(["synthetic", "human", "imported"])})
case = st.fixed_dictionaries(
    {"id": st.sampled_from(IDS[:8] + IDS[8:]), "input": st.text(max_size=5),
     "output": st.text(max_size=5)},
    optional={"policy": st.one_of(st.none(), st.text(max_size=3)),
              "metadata": st.fixed_dictionaries({}, optional={
                  "scenario": st.sampled_from(["a", "b", 1, None])}),
              "expected": st.dictionaries(st.sampled_from(RUBRIC_IDS), label, max_size=3)})
verdict = st.fixed_dictionaries(
    {"case_id": st.sampled_from([*IDS, "unknown-1", "unknown-2"]),
     "rubric_id": st.sampled_from(RUBRIC_IDS), "status": status},
    optional={"rationale": st.one_of(st.none(), st.text(max_size=4)),
              "rubric_hash": st.sampled_from(["h1", "h2"]),
              "state_hash": st.sampled_from(["s1", "s2"]),
              "exposure": st.fixed_dictionaries({"shown": st.lists(
                  st.sampled_from(["user_input", "policy"]), max_size=2, unique=True)}),
              "error": st.fixed_dictionaries({"cause": st.sampled_from(["timeout", "not_json"]),
                                              "detail": st.text(max_size=3)})})
junk = st.sampled_from([b"", b"   ", b"{oops", b"[]", b'{"id": 5}', b"\xff\xfe"])


def _lines(records: list[dict[str, Any]], noise: list[tuple[int, bytes]]) -> bytes:
    out = [json.dumps(r).encode() for r in records]
    for at, line in noise:  # after the first line, which the sniffer reads as the file's kind
        out.insert(min(max(at, 1), len(out)), line)
    return b"\n".join(out) + b"\n"


def _unique(verdicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen, out = set(), []
    for v in verdicts:
        if plain.key(v) not in seen:
            seen.add(plain.key(v))
            out.append(v)
    return out


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(cases=st.lists(case, max_size=10), run_a=st.lists(verdict, max_size=14),
       run_b=st.lists(verdict, max_size=14),
       pending=st.lists(st.tuples(st.sampled_from(IDS), st.sampled_from(RUBRIC_IDS)),
                        max_size=3),
       noise=st.lists(st.tuples(st.integers(0, 20), junk), max_size=4))
def test_generated_datasets_give_the_plain_lists(tmp_path_factory: Any, cases: list[Any],
                                                 run_a: list[Any], run_b: list[Any],
                                                 pending: list[tuple[str, str]],
                                                 noise: list[tuple[int, bytes]]) -> None:
    tmp = tmp_path_factory.mktemp("gen")
    rubrics = tmp / "rubrics.toml"
    rubrics.write_text(RUBRICS)
    paths = {"cases": tmp / "cases.jsonl", "verdicts": tmp / "a.jsonl",
             "compare": tmp / "b.jsonl"}
    # A first line that is a case: a file of noise alone is plainly not JSONL (exit 4).
    paths["cases"].write_bytes(_lines([{"id": "first", "input": "", "output": ""}, *cases],
                                      noise))
    states = [{"case_id": c, "rubric_id": r, "question": "q", "state": {}} for c, r in pending]
    verdicts = _unique(run_a) + states  # noise only after a record: noise alone is exit 4
    paths["verdicts"].write_bytes(_lines(verdicts, noise[:2] if verdicts else []))
    paths["compare"].write_bytes(_lines(_unique(run_b), []))
    with site(paths["verdicts"], paths["cases"], compare=str(paths["compare"]),
              rubrics=load_rubrics([str(rubrics)])) as s:
        p = plain.read(paths["cases"], paths["verdicts"], paths["compare"])
        assert entries(s, "disagreements") == plain.disagreements(p)
        assert entries(s, "unscored") == plain.unscored(p)
        assert entries(s, "verdicts") == plain.everything(p)
        assert entries(s, "flips") == plain.flips(p)
        check_skipped(s, p, paths["cases"], tmp, [str(rubrics)])
        check_counts(s, paths)
        assert len(s.index.unknown_where) == len(
            ({v["case_id"] for _, v in p.verdicts + p.other} | {c for c, _ in p.pending})
            - set(p.cases))


# -- refusals --------------------------------------------------------------------------------------
def test_a_repeated_verdict_key_is_refused_naming_both_lines(tmp_path: Path) -> None:
    lines = VERDICTS.read_text().splitlines()
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text("\n".join([*lines, lines[4]]) + "\n")
    with pytest.raises(DuplicateKeyError, match=rf"lines 5 and {len(lines) + 1} are both "
                                                r"verdicts for one case and rubric "
                                                r"`tool-backed-claims`"):
        with site(verdicts):
            pass


def test_inputs_view_cannot_read_by_offset_are_refused_with_the_fix(tmp_path: Path) -> None:
    packed = tmp_path / "verdicts.jsonl.gz"
    packed.write_bytes(gzip.compress(VERDICTS.read_bytes()))
    with pytest.raises(UsageError, match=r"is compressed; .* decompress it first \(`gunzip -k"):
        with site(packed):
            pass
    with pytest.raises(UsageError, match=r"needs a file, not stdin"):
        with site("-"):
            pass
    with pytest.raises(InputError, match=r"cannot read .*missing.jsonl"):
        with site(tmp_path / "missing.jsonl"):
            pass
    with pytest.raises(UsageError, match=r"not a regular file"):
        with site(VERDICTS, tmp_path):
            pass
    table = tmp_path / "cases.csv"
    table.write_text("id,question,answer\n1,a,b\n2,c,d\n")
    with pytest.raises(WrongFileError, match=r"is a CSV table"):
        with site(VERDICTS, table):
            pass
    with pytest.raises(UsageError, match=r"--by takes one metadata key"):
        with site(by="a,b"):
            pass


def test_a_file_changed_after_indexing_is_never_read_at_a_stale_offset(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_bytes(CASES.read_bytes())
    with site(VERDICTS, cases) as s:
        assert s.source.case_id(0) == "case-01"
        cases.write_bytes(b"\n" + CASES.read_bytes())
        os.utime(cases, ns=(1, 1))
        with pytest.raises(FileChanged, match=r"changed after view indexed it"):
            s.source.case_id(0)


@pytest.mark.slow
def test_the_index_holds_a_few_dozen_bytes_a_line(tmp_path: Path) -> None:
    cases, verdicts = tmp_path / "cases.jsonl", tmp_path / "verdicts.jsonl"
    with open(cases, "w") as c, open(verdicts, "w") as v:
        for i in range(20_000):
            c.write(json.dumps({"id": f"case-{i}", "input": "hello " * 20, "output": "hi " * 40,
                                "expected": {"r": {"status": "pass", "source": "human"}}}) + "\n")
            v.write(json.dumps({"case_id": f"case-{i}", "rubric_id": "r", "status": "fail",
                                "rationale": "because " * 30}) + "\n")
    with site(verdicts, cases) as s:
        per_line = s.index.nbytes / s.index.lines
        # 40,000 lines of ~400 bytes: case columns 16 B a case and the id index 24 B a slot
        # (39 B a case here), verdict columns 61 B (with their hashes, stale and pair codes),
        # labels 10 B, and 10 B for each of the seven built-in checks build skips for every
        # case (none of them applies; of the nine, task-success and instruction-following
        # apply to any case): 196 B a case and its verdict, ~98 B a line.
        # Text kept by mistake would be hundreds.
        assert 20 < per_line < 110, per_line
        assert len(s.lists["disagreements"]) == 20_000
