"""``batch prepare``: golden request files for both providers, splits at the limits never
mid-line, the same bytes every time, custom_ids from the store key, one line per distinct
request, stored answers left out, a folder that appears whole or not at all."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import msgspec
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstream._build.run import Options as BuildOptions
from evalstream._build.run import run as build_run
from evalstream._judge import inputs
from evalstream._judge.batch import prepare
from evalstream._judge.batch.manifest import Exposures, Manifest
from evalstream._judge.providers import anthropic, get
from evalstream._judge.request import JudgeConfig, build
from evalstream._judge.store import Store
from evalstream.errors import UsageError
from tests.helpers import SAMPLES, golden
from tests.judge.batch.support import prepared, request_lines
from tests.judge.support import states

GOLDEN = Path(__file__).resolve().parent / "golden"


@pytest.fixture(scope="module")
def sample_states(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample cases built with the sample rubrics: 61 judge states, 10 exact verdicts."""
    out = tmp_path_factory.mktemp("samples") / "states.jsonl"
    build_run(BuildOptions(input=str(SAMPLES / "cases.jsonl"), output=str(out),
                           rubric_files=[str(SAMPLES / "rubrics.toml")]))
    return out


@pytest.mark.parametrize(("provider", "model"), [("openai", "gpt-4.1-mini"),
                                                 ("anthropic", "claude-sonnet-4-5")])
def test_golden_request_files(sample_states: Path, tmp_path: Path, provider: str,
                              model: str) -> None:
    folder = tmp_path / "batch"
    report = prepare.run(prepare.Options(
        input=str(sample_states), folder=str(folder),
        config=JudgeConfig(model=model, provider=provider), max_requests_per_file=32))
    assert [f.name for f in report.files] == ["requests-00001.jsonl", "requests-00002.jsonl"]
    for f in report.files:
        golden(f"{provider}.{f.name}", (folder / f.name).read_bytes(), GOLDEN)
    # Each line carries exactly the body the live judge sends for its state.
    config = JudgeConfig(model=model, provider=provider)
    expected = []
    for item in inputs.read(str(sample_states)):
        if isinstance(item, inputs.JudgeState):
            expected.append(build(config, item.question, item.state, item.allows_na))
    got = request_lines(folder)
    assert [(x["custom_id"], x["_body"]) for x in got] == [(r.key, r.body) for r in expected]
    # The rubrics that always apply (allows_na = false) are asked for pass or fail only.
    enums = {b'"enum":["pass","fail"]' in r.body for r in expected}
    assert enums == {True, False}
    c = report.counts
    assert (c.lines, c.judge_states, c.exact_verdicts, c.requests) == (71, 61, 10, 61)
    assert c.lines == c.blank + c.judge_states + c.exact_verdicts + c.rejected
    assert c.judge_states == c.requests + c.duplicates + c.stored
    assert json.loads((folder / "prepare.report.json").read_bytes())["counts"]["requests"] == 61


def test_same_input_same_bytes_and_a_custom_id_per_request_whatever_the_dataset(
        tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["alpha", "beta", "gamma"])
    prepared(src, tmp_path / "a")
    prepared(src, tmp_path / "b")
    for name in ("requests-00001.jsonl", "rejects.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    # Another dataset holding one of these states (under another case id) asks the same
    # request under the same custom_id: one stored answer serves both.
    other = states(tmp_path / "in2", ["zeta", "beta"])
    ids_a = {x["custom_id"] for x in request_lines(tmp_path / "a")}
    prepared(other, tmp_path / "c")
    ids_c = [x["custom_id"] for x in request_lines(tmp_path / "c")]
    assert ids_c[1] in ids_a and ids_c[0] not in ids_a


def test_states_sharing_a_request_share_one_line(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["same", "same", "other", "same"])
    report = prepared(src, tmp_path / "b")
    assert (report.counts.requests, report.counts.duplicates) == (2, 2)
    assert len(request_lines(tmp_path / "b")) == 2
    m = Manifest.open(str(tmp_path / "b"), readonly=True)
    try:
        assert m.count("states") == 4 and m.count("requests") == 2
        keys = [s.key for s in m.items()]  # type: ignore[union-attr]
    finally:
        m.close()
    assert keys[0] == keys[1] == keys[3] != keys[2]


def test_a_repeated_request_is_cut_from_later_files_and_an_emptied_file_removed(
        tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a", "b", "a", "a", "c", "b"])
    report = prepared(src, tmp_path / "b", max_requests_per_file=2)
    # Written as [a b] [a a] [c b]; the repeats are cut: [a b] [] [c].
    assert [(f.name, f.requests) for f in report.files] == [("requests-00001.jsonl", 2),
                                                            ("requests-00003.jsonl", 1)]
    assert (report.counts.requests, report.counts.duplicates) == (3, 3)
    assert sorted(p.name for p in (tmp_path / "b").glob("requests-*")) == [
        "requests-00001.jsonl", "requests-00003.jsonl"]
    m = Manifest.open(str(tmp_path / "b"), readonly=True)
    try:
        files = m.files()
        assert [(f.n, f.requests) for f in files] == [(1, 2), (3, 1)]
        for f in files:
            data = (tmp_path / "b" / f.name).read_bytes()
            assert len(data) == f.bytes and xxhash.xxh3_128_hexdigest(data) == f.xxh3
        ids = [x["custom_id"] for x in request_lines(tmp_path / "b")]
        assert len(ids) == len(set(ids)) == 3 and all(m.has_request(i) for i in ids)
        assert m.count("states") == 6
    finally:
        m.close()


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(per_file=st.integers(1, 7), max_bytes=st.integers(2_500, 9_000),
       provider=st.sampled_from(["openai", "anthropic"]))
def test_files_split_at_the_limits_never_mid_line(tmp_path_factory: pytest.TempPathFactory,
                                                 per_file: int, max_bytes: int,
                                                 provider: str) -> None:
    tmp = tmp_path_factory.mktemp("split")
    src = states(tmp / "in", [f"state {i} " + "x" * (i * 97 % 400) for i in range(13)])
    prepared(src, tmp / "whole", provider)
    report = prepared(src, tmp / "split", provider, max_requests_per_file=per_file,
                      max_bytes_per_file=max_bytes)
    joined = b""
    for f in report.files:
        data = (tmp / "split" / f.name).read_bytes()
        assert len(data) == f.bytes <= max_bytes and data.count(b"\n") == f.requests <= per_file
        assert data.endswith(b"\n")
        for line in data.splitlines():
            json.loads(line)  # every line whole
        joined += data
    assert joined == (tmp / "whole" / "requests-00001.jsonl").read_bytes()
    # A new file is begun only when the next line would not fit.
    for f, g in zip(report.files, report.files[1:], strict=False):
        first_of_next = (tmp / "split" / g.name).read_bytes().split(b"\n")[0]
        assert f.requests == per_file or f.bytes + len(first_of_next) + 1 > max_bytes


def test_a_request_larger_than_a_file_may_hold_is_rejected(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["short", "long " + "y" * 5000])
    report = prepared(src, tmp_path / "b", max_bytes_per_file=4_000)
    assert (report.counts.requests, report.counts.rejected, report.exit_code) == (1, 1, 1)
    assert report.rejected_by_kind == {prepare.OVER_LIMIT: 1}
    reject = json.loads((tmp_path / "b" / "rejects.jsonl").read_text())
    assert reject["line"] == 2 and reject["id"] == "c001" and "judge it live" in reject["error"]
    c = report.counts
    assert c.lines == c.blank + c.judge_states + c.exact_verdicts + c.rejected


def test_bad_input_lines_are_rejects_and_exit_1(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a", "b"])
    with open(src, "ab") as f:
        f.write(b'{"case_id": "x", "rubric_id": "helpful"}\nnot json\n\n')
    report = prepared(src, tmp_path / "b")
    c = report.counts
    assert (c.lines, c.judge_states, c.rejected, c.blank, report.exit_code) == (5, 2, 2, 1, 1)
    rejects = [json.loads(x) for x in (tmp_path / "b" / "rejects.jsonl").read_text().splitlines()]
    assert [r["line"] for r in rejects] == [3, 4]
    assert "Required field `question` is missing" in rejects[0]["error"]


def _store_with(path: Path, config: JudgeConfig, src: Path, which: set[int]) -> None:
    store = Store(str(path))
    try:
        for i, item in enumerate(inputs.read(str(src))):
            if i in which:
                assert isinstance(item, inputs.JudgeState)
                key = build(config, item.question, item.state).key
                store.put(key, config.provider, config.model, b"{}", None, None, None, 1.0, 1)
    finally:
        store.close()


def test_cache_leaves_out_what_the_store_already_answered(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a", "b", "c", "d"])
    config = JudgeConfig(model="fake-judge-1", base_url="http://127.0.0.1:9/v1",
                         max_output_tokens=256)
    _store_with(tmp_path / "s.sqlite", config, src, {1, 3})
    report = prepared(src, tmp_path / "b", store=str(tmp_path / "s.sqlite"))
    assert (report.counts.requests, report.counts.stored, report.counts.judge_states) == (2, 2, 4)
    assert report.store == str(tmp_path / "s.sqlite")
    m = Manifest.open(str(tmp_path / "b"), readonly=True)
    assert m.meta["store"] == str(tmp_path / "s.sqlite") and m.count("states") == 4
    m.close()


def test_only_missing_needs_a_collected_folder(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a"])
    prepared(src, tmp_path / "b1")
    with pytest.raises(UsageError, match="was never collected"):
        prepared(src, tmp_path / "b2", only_missing=str(tmp_path / "b1"))
    assert not (tmp_path / "b2").exists()
    with pytest.raises(UsageError, match="not both"):
        prepared(src, tmp_path / "b2", only_missing=str(tmp_path / "b1"), store="x")


@pytest.mark.parametrize("existing", ["file", "full folder"])
def test_an_existing_target_is_refused_and_left_alone(tmp_path: Path, existing: str) -> None:
    src = states(tmp_path / "in", ["a"])
    target = tmp_path / "b"
    if existing == "file":
        target.write_text("keep me")
    else:
        target.mkdir()
        (target / "x").write_text("keep me")
    with pytest.raises(UsageError, match="choose another name"):
        prepared(src, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "in"]


def test_an_empty_folder_is_filled(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a"])
    (tmp_path / "b").mkdir()
    assert prepared(src, tmp_path / "b").counts.requests == 1
    assert (tmp_path / "b" / "requests-00001.jsonl").exists()


def test_an_interrupted_prepare_leaves_nothing(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    src = states(tmp_path / "in", ["a", "b", "c"])
    calls = []

    def stop(*args: object) -> object:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return build(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(prepare, "build", stop)
    with pytest.raises(KeyboardInterrupt):
        prepared(src, tmp_path / "b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]  # no folder, no temporary


def test_the_manifest_maps_every_state_back(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a", "b"])
    prepared(src, tmp_path / "b")
    m = Manifest.open(str(tmp_path / "b"), readonly=True)
    try:
        got = [s for s in m.items()]
        assert m.config() == JudgeConfig(model="fake-judge-1", base_url="http://127.0.0.1:9/v1",
                                         max_output_tokens=256)
    finally:
        m.close()
    for item, s in zip(inputs.read(str(src)), got, strict=True):
        assert isinstance(item, inputs.JudgeState)
        assert (s.line, s.case_id, s.rubric_id, s.rubric_hash, s.state_hash,
                bytes(s.exposure)) == (item.line, item.case_id, item.rubric_id,
                                       item.rubric_hash, item.state_hash, bytes(item.exposure))
        assert s.key == build(m.config(), item.question, item.state).key  # type: ignore[union-attr]


@given(st.lists(st.binary(max_size=60), max_size=40),
       st.integers(1, 6))
def test_exposures_round_trip_any_bytes(texts: list[bytes], cap: int) -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE templates (n INTEGER PRIMARY KEY, text BLOB NOT NULL)")
    packer = Exposures(db)
    import evalstream._judge.batch.manifest as manifest_module

    old = manifest_module.MAX_TEMPLATES
    manifest_module.MAX_TEMPLATES = cap  # past the cap, exposures are kept whole
    try:
        packed = [packer.pack(t) for t in texts]
        reader = Exposures(db)
        assert [reader.unpack(*p) for p in packed] == texts
    finally:
        manifest_module.MAX_TEMPLATES = old


def test_an_exposure_as_build_writes_it_keeps_only_its_digits(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a", "b", "c"])
    prepared(src, tmp_path / "b")
    db = sqlite3.connect(tmp_path / "b" / "manifest.sqlite")
    templates = db.execute("SELECT count(*) FROM templates").fetchone()[0]
    digits = [n for (n,) in db.execute("SELECT digits FROM states")]
    db.close()
    assert templates <= 3 and all(n.isdigit() and len(n) < 25 for n in digits)


def test_the_folder_is_readable_by_others_as_the_umask_says(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a"])
    prepared(src, tmp_path / "b")
    mask = os.umask(0)
    os.umask(mask)
    assert (tmp_path / "b").stat().st_mode & 0o777 == 0o777 & ~mask


def test_limits_are_the_providers() -> None:
    assert get("openai").batch_limits == (50_000, 200_000_000)
    assert get("anthropic").batch_limits.requests == 100_000
    assert get("anthropic").batch_limits.bytes + anthropic.WRAP == 256_000_000
    assert msgspec.json.decode(b"[]") == []


def test_a_base_url_that_is_not_http_is_a_usage_error(sample_states: Path,
                                                      tmp_path: Path) -> None:
    folder = tmp_path / "batch"
    with pytest.raises(UsageError, match=r"--base-url must be an http:// or https:// URL"):
        prepare.run(prepare.Options(input=str(sample_states), folder=str(folder),
                                    config=JudgeConfig(model="m", base_url="localhost:8000")))
    assert not folder.exists()
