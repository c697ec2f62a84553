"""build and validate on a real Dask cluster (a scheduler and two workers on 127.0.0.1,
started by the tests): byte-identical to one process reading the same files in order, on
the sample, hostile files, the shared corpus and an S3-compatible store; a worker killed
mid-run; atomic targets."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import zstandard

from evalstream._build.run import Options, run
from evalstream._cases import duplicates
from evalstream._engines import dask as engine
from evalstream._engines import ranges
from evalstream._files import outputs
from evalstream.errors import InputError, OutputError, UsageError, WrongFileError
from tests.cluster import DaskProcesses, S3Server
from tests.helpers import CORPUS, SAMPLES

# Slow as a module: a real Dask cluster and moto's S3 server: seconds to start.
pytestmark = pytest.mark.slow

RANGE = 1024  # tiny ranges: lines cross every boundary, long lines span several


@pytest.fixture
def small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    # Both are read by the client only (tasks carry their bounds), so the workers need no patch.
    monkeypatch.setattr(ranges, "RANGE_BYTES", RANGE)
    monkeypatch.setattr(duplicates, "REDUCER_BYTES", 16 * RANGE)  # several reducers
    monkeypatch.setattr(engine, "GROUP", 3)  # several groups of tasks for each reducer


def _options(inputs: list[str], output: str | None, **more: object) -> Options:
    return Options(input=" ".join(inputs), inputs=inputs if len(inputs) > 1 else [],
                   output=output, **more)  # type: ignore[arg-type]


def _report(path: Path) -> dict[str, object]:
    strip = {"seconds", "output", "rejects", "report"}
    return {k: v for k, v in json.loads(path.read_text()).items() if k not in strip}


def same_as_one_process(tmp_path: Path, inputs: list[str], address: str,
                        **more: object) -> None:
    """build and validate: output, rejects and report equal to one process's, byte for byte."""
    one, first_one = run(_options(inputs, str(tmp_path / "one.jsonl"), **more))
    two, first_two = run(_options(inputs, str(tmp_path / "two.jsonl"), engine="dask",
                                  scheduler=address, **more))
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    assert _same_file(tmp_path / "two.rejects.jsonl", tmp_path / "one.rejects.jsonl")
    assert _report(tmp_path / "two.report.json") == _report(tmp_path / "one.report.json")
    assert first_two == first_one
    c = one.counts
    assert c.lines == c.blank + c.cases + c.rejected
    v1, _ = run(_options(inputs, None, rejects=str(tmp_path / "v1.jsonl"), **more))
    v2, _ = run(_options(inputs, None, rejects=str(tmp_path / "v2.jsonl"), engine="dask",
                         scheduler=address, **more))
    assert (tmp_path / "v2.jsonl").read_bytes() == (tmp_path / "v1.jsonl").read_bytes()
    assert v2.counts == v1.counts and v2.rejected_by_kind == v1.rejected_by_kind
    assert not list(tmp_path.glob(".*evalstream-parts*")), "the parts folder is left"


def _same_file(a: Path, b: Path) -> bool:
    """Both absent (no rejects: no new rejects file), or both there with the same bytes."""
    return a.exists() == b.exists() and (not a.exists() or a.read_bytes() == b.read_bytes())


# -- hostile files ---------------------------------------------------------------------------
def _case(case_id: str, text: str = "q", **more: object) -> bytes:
    return json.dumps({"id": case_id, "input": text, "output": "a", **more},
                      ensure_ascii=False).encode()


def hostile_files(folder: Path) -> list[str]:
    """Files whose lines cross range boundaries, span several ranges, start exactly at one;
    CRLF, U+2028/U+0085 inside strings, BOMs, no final newline, blank and bad lines, and
    duplicate ids within a range, across ranges, across files and in compressed files."""
    rng = random.Random(18)
    lines: list[bytes] = []
    size = 0

    def add(line: bytes, end: bytes = b"\n") -> None:
        nonlocal size
        lines.append(line + end)
        size += len(line) + len(end)

    for i in range(120):
        if i == 40:  # a line longer than three ranges: the ranges inside it own no line
            add(_case("long", "x" * (3 * RANGE + 100), context=[{"id": "c", "text": "y"}]))
        if i % 17 == 5:  # the next line starts exactly at a range boundary
            fill = b'{"id":"pad-%d","input":"' % i
            tail = b'","output":"a"}'
            room = -(size + len(fill) + len(tail) + 1) % RANGE
            add(fill + b"p" * room + tail)
            assert size % RANGE == 0
        text = rng.choice(["plain", "sep\u2028line", "next\u0085line", "é" * 30, "CJK 字"])
        end = b"\r\n" if i % 9 == 0 else b"\n"
        case_id = f"case-{rng.randrange(i)}" if i % 11 == 10 else f"case-{i}"  # duplicates
        add(_case(case_id, text, policy="p" * rng.randrange(0, 300),
                  metadata={"scenario": rng.choice(["booking", "rag"])}), end)
        if i % 23 == 7:
            add(b"")  # blank
            add(b'{"id": "bad-%d", "input": 3}' % i)  # rejected
    (folder / "a.jsonl").write_bytes(b"".join(lines))
    second = [b"\xef\xbb\xbf" + _case("b-0"), _case("case-3"), b"   ", _case("b-1"),
              _case("case-77", "dup of the first file, last line, no newline")]
    (folder / "b.jsonl").write_bytes(b"\n".join(second))
    third = b"\n".join([_case("c-0"), _case("case-5"), _case("b-1"), b"{not json"]) + b"\n"
    (folder / "c.jsonl.gz").write_bytes(gzip.compress(third, mtime=0))
    fourth = b"\n".join([_case("d-0"), _case("c-0"), _case("d-1", "x" * 5000)]) + b"\n"
    (folder / "d.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(fourth))
    (folder / "empty.jsonl").write_bytes(b"")
    return [str(folder / n) for n in ("a.jsonl", "b.jsonl", "c.jsonl.gz", "empty.jsonl",
                                      "d.jsonl.zst")]


def test_hostile_files(tmp_path: Path, dask_cluster: str, small_ranges: None) -> None:
    data = tmp_path / "in"
    data.mkdir()
    inputs = hostile_files(data)
    # Over-budget checks too: their line numbers are renumbered like the rejects'.
    same_as_one_process(tmp_path, inputs, dask_cluster, max_tokens=300)
    rejects = [json.loads(x) for x in (tmp_path / "one.rejects.jsonl").read_bytes().split(b"\n")
               if x]  # not splitlines(): U+2028 may be raw inside a string
    kinds = [r["error"] for r in rejects]
    assert sum("already used" in k for k in kinds) >= 10  # across ranges and files
    assert any(r["id"] == "b-1" and "already used" in r["error"] for r in rejects)
    assert any(r["id"] == "c-0" for r in rejects)  # a .gz first use, a .zst duplicate


@pytest.mark.parametrize("duplicate", ["none", "late", "first"])
def test_a_file_output_joined_while_tasks_run_is_cut_back_at_the_first_duplicate(
        tmp_path: Path, dask_cluster: str, small_ranges: None, monkeypatch: pytest.MonkeyPatch,
        duplicate: str) -> None:
    # The client joins a local output as parts arrive and, once the reducers have named the
    # duplicates, cuts it back to where the first part holding one began.
    # With a policy, four built-in rubrics apply (two of them, task-success and
    # instruction-following, to every case): every case writes records.
    lines = [_case(f"case-{i}", "q" * 40, policy="p") for i in range(200)]  # ~17 ranges
    if duplicate == "late":
        lines[-1] = _case("case-150", "q" * 40, policy="p")
    elif duplicate == "first":
        lines[1] = _case("case-0", policy="p")
    (tmp_path / "in.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    rewinds: list[int] = []
    rewind = outputs.AtomicOutput.rewind

    def spy(self: outputs.AtomicOutput, size: int) -> None:
        rewinds.append(size)
        rewind(self, size)

    monkeypatch.setattr(outputs.AtomicOutput, "rewind", spy)
    same_as_one_process(tmp_path, [str(tmp_path / "in.jsonl")], dask_cluster)
    one = (tmp_path / "one.jsonl").read_bytes()
    assert one.count(b"\n") == 4 * (200 - (duplicate != "none"))
    if duplicate == "none":
        assert rewinds == []
    elif duplicate == "late":  # the parts before the last stayed in place
        assert len(rewinds) == 1 and 0 < rewinds[0] < len(one)
    else:
        assert rewinds == [0]


def test_hostile_files_as_a_glob_and_line_limits(tmp_path: Path, dask_cluster: str,
                                                 small_ranges: None) -> None:
    data = tmp_path / "in"
    data.mkdir()
    hostile_files(data)
    # The long line is over the limit: a reject whose head is kept, on both engines.
    same_as_one_process(tmp_path, [str(data / "*.jsonl*")], dask_cluster,
                        max_line_bytes=2 * RANGE)


def test_sample_build_and_validate(tmp_path: Path, dask_cluster: str) -> None:
    inputs = [str(SAMPLES / "cases.jsonl"), str(SAMPLES / "bad.jsonl"),
              str(SAMPLES / "cases.jsonl")]  # the third: every id a duplicate
    same_as_one_process(tmp_path, inputs, dask_cluster)


def test_the_python_api_takes_a_list_and_the_engine(tmp_path: Path, dask_cluster: str) -> None:
    import evalstream

    inputs = [SAMPLES / "cases.jsonl", SAMPLES / "bad.jsonl"]
    one = evalstream.validate(inputs, rejects=str(tmp_path / "one.jsonl"))
    two = evalstream.validate(inputs, rejects=str(tmp_path / "two.jsonl"), engine="dask",
                              scheduler=dask_cluster)
    assert (one.counts, one.input) == (two.counts, two.input)
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()
    s = evalstream.stats(inputs, engine="dask", scheduler=dask_cluster)
    assert s == evalstream.stats(inputs)


def test_sample_in_small_ranges(tmp_path: Path, dask_cluster: str, small_ranges: None) -> None:
    same_as_one_process(tmp_path, [str(SAMPLES / "cases.jsonl"), str(SAMPLES / "bad.jsonl")],
                        dask_cluster)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")
def test_corpus(tmp_path: Path, dask_cluster: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranges, "RANGE_BYTES", 1 << 20)
    monkeypatch.setattr(duplicates, "REDUCER_BYTES", 8 << 20)
    same_as_one_process(tmp_path, [str(CORPUS / "*.jsonl")], dask_cluster)


# -- output shapes --------------------------------------------------------------------------------
def test_directory_of_parts(tmp_path: Path, dask_cluster: str, small_ranges: None) -> None:
    inputs = [str(SAMPLES / "cases.jsonl"), str(SAMPLES / "bad.jsonl"),
              str(SAMPLES / "cases.jsonl")]
    run(_options(inputs, str(tmp_path / "one.jsonl")))
    run(_options(inputs, str(tmp_path / "states") + "/", engine="dask",
                 scheduler=dask_cluster))
    manifest = json.loads((tmp_path / "states" / "manifest.json").read_text())
    assert manifest["shape"] == "evalstream.parts/1"
    assert len(manifest["parts"]) > 10
    joined = b"".join((tmp_path / "states" / p).read_bytes() for p in manifest["parts"])
    assert joined == (tmp_path / "one.jsonl").read_bytes()
    assert manifest["bytes"] == len(joined)
    assert ((tmp_path / "states" / manifest["rejects"]).read_bytes()
            == (tmp_path / "one.rejects.jsonl").read_bytes())  # bad.jsonl: there are rejects
    assert (_report(tmp_path / "states" / manifest["report"])
            == _report(tmp_path / "one.report.json"))
    assert sorted(os.listdir(tmp_path / "states")) == sorted(
        [*manifest["parts"], "manifest.json", "rejects.jsonl", "report.json"])
    # A second run replaces the directory whole.
    run(_options([str(SAMPLES / "cases.jsonl")], str(tmp_path / "states") + "/",
                 engine="dask", scheduler=dask_cluster))
    again = json.loads((tmp_path / "states" / "manifest.json").read_text())
    assert again["rejects"] is None  # none: no empty rejects file, as one process
    assert sorted(os.listdir(tmp_path / "states")) == sorted(
        [*again["parts"], "manifest.json", "report.json"])
    assert not list(tmp_path.glob(".*evalstream-parts*"))


def test_a_directory_is_replaced_only_as_an_earlier_output_holding_nothing_else(
        tmp_path: Path, dask_cluster: str) -> None:
    states = str(tmp_path / "states") + "/"
    run(_options([str(SAMPLES / "cases.jsonl")], states, engine="dask", scheduler=dask_cluster))
    first = sorted(os.listdir(tmp_path / "states"))
    (tmp_path / "states" / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match=r"holds notes\.txt, which the earlier output there did "
                       r"not write"):
        run(_options([str(SAMPLES / "cases.jsonl")], states, engine="dask",
                     scheduler=dask_cluster))
    assert sorted(os.listdir(tmp_path / "states")) == sorted([*first, "notes.txt"])
    run(_options([str(SAMPLES / "cases.jsonl")], states, engine="dask", scheduler=dask_cluster,
                 force=True))
    assert sorted(os.listdir(tmp_path / "states")) == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["states"]  # no temporary left


def test_an_object_store_prefix_is_replaced_only_as_an_earlier_output(
        tmp_path: Path, dask_cluster: str, s3: S3Server) -> None:
    import fsspec

    fs = fsspec.filesystem("s3")
    cases = _put(s3, "prefix/in/cases.jsonl", (SAMPLES / "cases.jsonl").read_bytes())
    notes = _put(s3, "prefix/mine/notes.txt", b"keep me")
    with pytest.raises(UsageError, match=r"holds notes\.txt, which no directory output wrote"):
        run(_options([cases], f"s3://{s3.bucket}/prefix/mine/", engine="dask",
                     scheduler=dask_cluster))
    # The run's own input inside the prefix: refused, even with --force.
    for force in (False, True):
        with pytest.raises(UsageError, match=r"the input s3://.*/in/cases\.jsonl is inside the "
                           r"output folder"):
            run(_options([f"s3://{s3.bucket}/prefix/in/*.jsonl"], f"s3://{s3.bucket}/prefix/",
                         engine="dask", scheduler=dask_cluster, force=force))
    assert fs.cat(notes) == b"keep me"
    assert fs.cat(cases) == (SAMPLES / "cases.jsonl").read_bytes()
    out = f"s3://{s3.bucket}/prefix/out/"
    run(_options([cases], out, engine="dask", scheduler=dask_cluster))
    first = sorted(fs.find(out))
    run(_options([cases], out, engine="dask", scheduler=dask_cluster))  # replaced
    assert sorted(fs.find(out)) == first
    extra = _put(s3, "prefix/out/extra/notes.txt", b"mine")
    with pytest.raises(UsageError, match=r"holds extra/notes\.txt, which the earlier output"):
        run(_options([cases], out, engine="dask", scheduler=dask_cluster))
    assert fs.cat(extra) == b"mine"
    run(_options([cases], out, engine="dask", scheduler=dask_cluster, force=True))
    assert sorted(fs.find(out)) == first


def test_an_object_holding_something_else_is_refused(tmp_path: Path, s3: S3Server) -> None:
    import fsspec

    fs = fsspec.filesystem("s3")
    cases = (SAMPLES / "cases.jsonl").read_bytes()
    target = _put(s3, "objects/cases.jsonl", cases)  # a shell glob named the data as output
    with pytest.raises(UsageError, match=r"objects/cases\.jsonl holds a cases file, and this "
                       r"run would replace it with judge states .*--force"):
        run(_options([str(SAMPLES / "cases.jsonl")], target, engine="dask"))
    report = _put(s3, "objects/states.report.json", b'{"my": "notes"}')
    with pytest.raises(UsageError, match=r"states\.report\.json holds"):
        run(_options([str(SAMPLES / "cases.jsonl")], f"s3://{s3.bucket}/objects/states.jsonl",
                     engine="dask"))
    assert fs.cat(target) == cases and fs.cat(report) == b'{"my": "notes"}'


def test_a_failed_run_writes_nothing(tmp_path: Path, dask_cluster: str,
                                     small_ranges: None) -> None:
    (tmp_path / "table.jsonl").write_text("id,input,output\n1,a,b\n2,c,d\n")
    (tmp_path / "one.jsonl").write_text("an earlier output\n")
    inputs = [str(SAMPLES / "cases.jsonl"), str(tmp_path / "table.jsonl")]
    with pytest.raises(UsageError, match="give --force to replace it"):
        run(_options(inputs, str(tmp_path / "one.jsonl"), engine="dask",
                     scheduler=dask_cluster))  # refused before the cluster is asked
    with pytest.raises(WrongFileError, match="table.jsonl is a CSV table"):
        # --force: the earlier file is not build's output, and must survive all the same.
        run(_options(inputs, str(tmp_path / "one.jsonl"), engine="dask",
                     scheduler=dask_cluster, force=True))
    assert (tmp_path / "one.jsonl").read_text() == "an earlier output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.jsonl", "table.jsonl"]
    with pytest.raises(WrongFileError):
        run(_options(inputs, str(tmp_path / "dir") + "/", engine="dask",
                     scheduler=dask_cluster))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.jsonl", "table.jsonl"]


def test_a_target_that_cannot_be_created_leaves_no_temporary(tmp_path: Path,
                                                              dask_cluster: str) -> None:
    # The output and the rejects were opened before the report failed: the run's
    # transaction aborts them all (their temporaries stayed before).
    with pytest.raises(OutputError, match="cannot create .*gone/r.json"):
        run(_options([str(SAMPLES / "bad.jsonl")], str(tmp_path / "s.jsonl"), engine="dask",
                     scheduler=dask_cluster, report=str(tmp_path / "gone" / "r.json")))
    assert list(tmp_path.iterdir()) == []


def test_inputs_that_match_nothing(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no file matches .*nothing-\*\.jsonl"):
        run(_options([str(tmp_path / "nothing-*.jsonl")], str(tmp_path / "o.jsonl")))
    with pytest.raises(UsageError, match="--scheduler needs --engine dask"):
        run(_options([str(SAMPLES / "cases.jsonl")], str(tmp_path / "o.jsonl"),
                     scheduler="tcp://127.0.0.1:1"))
    with pytest.raises(UsageError, match=r"that names a directory; give a file name\. A "
                       r"directory of parts \(a name ending in /\) is written by --engine "
                       r"dask only\."):
        run(_options([str(SAMPLES / "cases.jsonl")], str(tmp_path / "o") + "/"))


def test_an_unreachable_scheduler_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evalstream", "build", str(SAMPLES / "cases.jsonl"),
         str(tmp_path / "o.jsonl"), "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9",
         "-q"], capture_output=True, text=True, timeout=120,
        env={**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"})
    assert done.returncode == 2, done.stderr
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_validate_json_on_stdout(tmp_path: Path, dask_cluster: str) -> None:
    inputs = [str(SAMPLES / "bad.jsonl"), str(SAMPLES / "cases.jsonl"), str(SAMPLES / "bad.jsonl")]
    runs = [subprocess.run([sys.executable, "-m", "evalstream", "validate", *inputs, "--format",
                            "json", "-q", *engine], capture_output=True, timeout=300)
            for engine in ([], ["--engine", "dask", "--scheduler", dask_cluster])]
    assert runs[0].returncode == runs[1].returncode == 1
    assert runs[1].stdout == runs[0].stdout
    import evalstream

    lines = [line for name in inputs for line in Path(name).read_bytes().split(b"\n")]
    repeated = sum(type(r) is evalstream.Reject and "already used" in r.error
                   for r in evalstream.read_cases(lines))
    assert runs[0].stdout.count(b"already used on line") == repeated > 1


def test_missing_dask_names_the_extra(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['distributed'] = None\n"
            "from evalstream._cli import main\n"
            f"sys.exit(main(['build', {str(SAMPLES / 'cases.jsonl')!r}, "
            f"{str(tmp_path / 'o.jsonl')!r}, '--engine', 'dask', '-q']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert "pip install 'evalstream[dask]'" in done.stderr
    assert list(tmp_path.iterdir()) == []


# -- object storage ------------------------------------------------------------------------------
def _put(s3: S3Server, key: str, data: bytes) -> str:
    import fsspec

    fs = fsspec.filesystem("s3")
    fs.pipe(f"{s3.bucket}/{key}", data)
    return f"s3://{s3.bucket}/{key}"


def test_s3_inputs_and_outputs(tmp_path: Path, dask_cluster: str, s3: S3Server,
                               small_ranges: None) -> None:
    import fsspec

    fs = fsspec.filesystem("s3")
    local = tmp_path / "in"
    local.mkdir()
    names = hostile_files(local)
    for name in names:
        _put(s3, f"cases/{Path(name).name}", Path(name).read_bytes())
    run(_options(names, str(tmp_path / "one.jsonl")))
    url = f"s3://{s3.bucket}/cases/*"
    # One file, streamed by this client (the parts are small); rejects and report as objects.
    report, _ = run(_options([url], f"s3://{s3.bucket}/out/states.jsonl", engine="dask",
                             scheduler=dask_cluster))
    assert fs.cat(f"{s3.bucket}/out/states.jsonl") == (tmp_path / "one.jsonl").read_bytes()
    assert (fs.cat(f"{s3.bucket}/out/states.rejects.jsonl")
            == (tmp_path / "one.rejects.jsonl").read_bytes())
    assert report.counts.lines > 100
    # A directory of parts, and the local engine reading the same URLs (one process).
    run(_options([url], f"s3://{s3.bucket}/out/dir/", engine="dask", scheduler=dask_cluster))
    manifest = json.loads(fs.cat(f"{s3.bucket}/out/dir/manifest.json"))
    joined = b"".join(fs.cat(f"{s3.bucket}/out/dir/{p}") for p in manifest["parts"])
    assert joined == (tmp_path / "one.jsonl").read_bytes()
    run(_options([url], str(tmp_path / "local-engine.jsonl")))
    assert (tmp_path / "local-engine.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    assert not [p for p in fs.find(f"{s3.bucket}/out") if "evalstream-parts" in p]


def test_s3_joins_large_parts_in_the_store(tmp_path: Path, dask_cluster: str, s3: S3Server,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import fsspec

    from evalstream._files import parts

    monkeypatch.setattr(ranges, "RANGE_BYTES", 6 << 20)  # parts over S3's 5 MiB least part
    good = (SAMPLES / "cases.jsonl").read_text().splitlines()
    lines = [line.replace('"id":"case-', f'"id":"n{n}-case-') for n in range(500)
             for line in good]
    src = tmp_path / "big.jsonl"
    src.write_text("\n".join(lines) + "\n")
    url = _put(s3, "big/big.jsonl", src.read_bytes())
    run(_options([str(src)], str(tmp_path / "one.jsonl")))
    joined_by: list[str | None] = []
    original = parts.StoreOutput.finish

    def spy(self: parts.StoreOutput) -> None:
        original(self)
        joined_by.append(self.joined_by)

    monkeypatch.setattr(parts.StoreOutput, "finish", spy)
    run(_options([url], f"s3://{s3.bucket}/big/states.jsonl", engine="dask",
                 scheduler=dask_cluster))
    assert "store" in joined_by  # S3's multipart copy joined the parts
    fs = fsspec.filesystem("s3")
    assert fs.cat(f"{s3.bucket}/big/states.jsonl") == (tmp_path / "one.jsonl").read_bytes()


# -- fault tolerance -----------------------------------------------------------------------------
def test_a_worker_killed_mid_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranges, "RANGE_BYTES", 64 << 10)
    monkeypatch.setattr(duplicates, "REDUCER_BYTES", 1 << 20)
    good = (SAMPLES / "cases.jsonl").read_text().splitlines()
    rng = random.Random(5)
    lines = [line.replace('"id":"case-', f'"id":"n{n}-case-') for n in range(150)
             for line in good]
    lines += rng.sample(lines, 200)  # late duplicates
    rng.shuffle(lines)
    src = tmp_path / "cases.jsonl"
    src.write_text("\n".join(lines) + "\n")
    run(_options([str(src)], str(tmp_path / "one.jsonl")))
    (tmp_path / "cluster").mkdir()
    processes = DaskProcesses(tmp_path / "cluster", workers=2)
    try:
        victim = processes.worker_pids()[0]
        killed = threading.Event()

        def progress(done: int, total: int | None) -> None:
            if not killed.is_set():  # the first result is in, most tasks are still to run
                os.kill(victim, 9)
                killed.set()

        report, _ = run(_options([str(src)], str(tmp_path / "two.jsonl"), engine="dask",
                                 scheduler=processes.address), on_progress=progress)
        assert killed.is_set()
        assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
        assert ((tmp_path / "two.rejects.jsonl").read_bytes()
                == (tmp_path / "one.rejects.jsonl").read_bytes())
        assert report.rejected_by_kind["duplicate id"] >= 150
        assert victim not in processes.worker_pids()  # it did die (its nanny started another)
    finally:
        processes.stop()


# -- the merge's re-reads, through the dask engine too ---------------------------------------------
def test_duplicates_filling_a_tasks_over_budget_list(tmp_path: Path, dask_cluster: str,
                                                     s3: S3Server,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # tests/build/test_ranges.py's case on the cluster: a task whose list of 1,000
    # over-budget checks is all late duplicates is listed again without them, by this
    # process reading the task's range (a local file's aligned range, or a URL's through
    # fsspec), so the report is the one process's.
    monkeypatch.setattr(ranges, "RANGE_BYTES", 60_000)
    rubric = tmp_path / "r.toml"
    rubric.write_text('[[rubric]]\nid = "r"\nquestion = "Q?"\nshows = ["user_input"]\n')

    def case(i: int, text: str = "x") -> str:
        return json.dumps({"id": f"c{i}", "input": text * 10, "output": "y"})

    lines = [case(i) for i in range(700)] + [case(i % 700, "d") for i in range(1_200)] + \
        [case(700 + i) for i in range(900)]
    src = tmp_path / "cases.jsonl"
    src.write_text("\n".join(lines) + "\n")
    url = _put(s3, "over-budget/cases.jsonl", src.read_bytes())
    more = {"rubric_files": [str(rubric)], "max_tokens": 5}
    run(_options([str(src)], str(tmp_path / "one.jsonl"), **more))
    one = _report(tmp_path / "one.report.json")
    assert len(one["over_budget"]) == 1_000  # type: ignore[arg-type]
    for name, given in (("local", str(src)), ("url", url)):
        run(_options([given], str(tmp_path / f"{name}.jsonl"), engine="dask",
                     scheduler=dask_cluster, **more))
        assert (tmp_path / f"{name}.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
        got = _report(tmp_path / f"{name}.report.json")
        got["input"] = one["input"]  # only the name given differs
        assert got == one, name
