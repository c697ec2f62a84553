"""inspect_ai eval logs, written by inspect_ai itself: .eval (zstd and deflate members) and
.json give the same cases; scores become imported labels; nothing silently dropped."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from evalstream._convert.formats.inspect_log import label_of
from evalstream.errors import InputError, UsageError
from tests.convert.inspect_logs import write_logs_apart
from tests.convert.support import convert, golden_run, validate_accepts

# Slow as a module: inspect_ai writes the logs it reads: seconds to import and run.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("logs")
    found = write_logs_apart(folder, {"eval": ("eval", 1), "json": ("json", 1),
                                      "epochs": ("eval", 2)})
    # Older inspect_ai wrote deflated members: the same log, recompressed.
    deflated = folder / "deflated.eval"
    with zipfile.ZipFile(found["eval"]) as src, \
            zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, _member(src, info))
    found["deflated"] = deflated
    return found


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    from evalstream._convert.formats.inspect_log import _member as read_member

    return read_member(archive, archive.filename or "", info.filename)


def test_golden(tmp_path: Path, logs: dict[str, Path]) -> None:
    with zipfile.ZipFile(logs["eval"]) as z:
        assert {i.compress_type for i in z.infolist() if i.filename.startswith("samples/")} == {93}
    result = convert(tmp_path, logs["eval"])
    validate_accepts(result.out)
    # The grader's messages carry ids inspect draws at random each run (22 characters).
    result.out.write_bytes(re.sub(rb'"id":"[A-Za-z0-9]{22}"', b'"id":"RANDOM"',
                                  result.out.read_bytes()))
    golden_run("inspect", result)
    assert result.report.format == "inspect"
    assert result.report.inferred == "its content: an inspect_ai eval log"


@pytest.mark.parametrize("kind", ["json", "deflated"])
def test_every_log_format_gives_the_same_cases(tmp_path: Path, logs: dict[str, Path],
                                               kind: str) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = convert(tmp_path / "a", logs["eval"]).out.read_bytes()
    second = convert(tmp_path / "b", logs[kind]).out.read_bytes()
    if kind == "deflated":  # the same log, recompressed
        assert second == first
    else:  # another run: only the grader's message ids (random per run) differ
        assert _without_grading_ids(second) == _without_grading_ids(first)


def _without_grading_ids(data: bytes) -> list[dict[str, Any]]:
    cases = [json.loads(line) for line in data.splitlines()]
    for case in cases:
        for score in case["metadata"]["inspect"]["scores"].values():
            for message in (score.get("metadata") or {}).get("grading", []):
                message.pop("id")
    return cases


def test_mapping(tmp_path: Path, logs: dict[str, Path]) -> None:
    result = convert(tmp_path, logs["eval"])
    by_id = {c["id"]: c for c in result.cases}
    q1 = by_id["q1"]
    assert q1["input"] == "What is 2+2?" and q1["output"] == "4"
    assert [m["role"] for m in q1["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert q1["messages"][2]["content"] == 'Let me look.\n[tool call] lookup {"city":"Atlantis"}'
    [event] = q1["toolEvents"]
    assert event == {"id": "call_a", "name": "lookup", "status": "failure",
                     "input": {"city": "Atlantis"}, "output": "", "error": "no such city"}
    assert by_id["2"]["toolEvents"][0]["status"] == "success"
    assert q1["expected"] == {"match": {"status": "pass", "source": "imported"},
                              "includes": {"status": "pass", "source": "imported"},
                              "model_graded_qa": {"status": "pass", "source": "imported"}}
    assert q1["metadata"]["scenario"] == "math"
    assert q1["metadata"]["inspect"]["scores"]["partial"]["value"] == "P"
    # NaN (inspect's unscored score) and infinities: no label, counted as the log spells them.
    assert result.report.unmapped_scores == {"extreme": {"-Infinity": 1, "Infinity": 1},
                                             "model_graded_qa": {"NaN": 1},
                                             "partial": {'"P"': 2}}
    assert result.report.labels == {"includes": {"fail": 1, "pass": 1},
                                    "match": {"fail": 1, "pass": 1}, "model_graded_qa": {"pass": 1}}
    graded = by_id["2"]["metadata"]["inspect"]["scores"]["model_graded_qa"]
    assert graded["value"] is None and graded["reason"] == "grader_failed"
    assert "model_graded_qa" not in by_id["2"]["expected"]
    assert result.report.counts.rejected == 0


def test_epochs_get_their_own_ids(tmp_path: Path, logs: dict[str, Path]) -> None:
    ids = [c["id"] for c in convert(tmp_path, logs["epochs"]).cases]
    assert ids == ["2.epoch-1", "q1.epoch-1", "2.epoch-2", "q1.epoch-2"]


def test_options_that_do_not_apply(tmp_path: Path, logs: dict[str, Path]) -> None:
    with pytest.raises(UsageError, match="--map applies to tables"):
        convert(tmp_path, logs["eval"], maps=["input=x,output=y"])
    with pytest.raises(UsageError, match="a tool message records its own error"):
        convert(tmp_path, logs["eval"], tool_failure_when=["never"])


def _with_sample_ids(tmp_path: Path, logs: dict[str, Path], ids: list[object]) -> Path:
    """The JSON log with its samples' ids replaced, in the log's order (``2``, then ``q1``):
    inspect allows `/` and spaces in them."""
    src = json.loads(logs["json"].read_text())
    for sample, new_id in zip(src["samples"], ids, strict=True):
        sample["id"] = new_id
    path = tmp_path / "renamed.json"
    path.write_text(json.dumps(src))
    return path


def test_a_sample_id_that_is_not_a_case_id_says_how_to_remap_it(
        tmp_path: Path, logs: dict[str, Path]) -> None:
    # It was rejected with the case format's sentence, with no way to remap it (issue 30).
    path = _with_sample_ids(tmp_path, logs, ["math/add", "q1"])
    result = convert(tmp_path, path)
    [reject] = result.rejects
    assert reject["row"] == 1 and reject["column"] == "id" and reject["path"] == "$.id"
    assert reject["error"].startswith("The sample id 'math/add' is not a valid case id "
                                      "(non-empty, at most 512 characters, without whitespace "
                                      "or `/`); give --id-from a template")


@pytest.mark.parametrize(("template", "ids"), [
    ("arith.{#}", ["arith.1", "arith.2"]),
    ("arith.{metadata.scenario}.{#}", ["arith.weather.1", "arith.math.2"]),
    ("t.{epoch}.{metadata.scenario}", ["t.1.weather", "t.1.math"]),
])
def test_id_from_remaps_sample_ids(tmp_path: Path, logs: dict[str, Path], template: str,
                                   ids: list[str]) -> None:
    path = _with_sample_ids(tmp_path, logs, ["math/add", "geo weather"])
    result = convert(tmp_path, path, id_from=template)
    assert [c["id"] for c in result.cases] == ids and not result.rejects
    # The sample ids as the log has them stay in metadata.
    assert [c["metadata"]["inspect"]["id"] for c in result.cases] == ["math/add", "geo weather"]
    assert result.report.ids == f"column {template}"
    validate_accepts(result.out)


def test_id_from_over_epochs_must_tell_them_apart(tmp_path: Path, logs: dict[str, Path]) -> None:
    result = convert(tmp_path, logs["epochs"], id_from="s.{id}")
    assert [c["id"] for c in result.cases] == ["s.2", "s.q1"]
    assert [r["error"][:45] for r in result.rejects] == ["Case id 's.2' was already used by row 1; case"] \
        + ["Case id 's.q1' was already used by row 2; cas"]
    (tmp_path / "b").mkdir()
    apart = convert(tmp_path / "b", logs["epochs"], id_from="s.{id}.{epoch}")
    assert [c["id"] for c in apart.cases] == ["s.2.1", "s.q1.1", "s.2.2", "s.q1.2"]


def test_damaged_log(tmp_path: Path, logs: dict[str, Path]) -> None:
    data = bytearray(logs["eval"].read_bytes())
    bad = tmp_path / "bad.eval"
    bad.write_bytes(bytes(data[: len(data) // 2]))
    with pytest.raises(InputError, match="cannot read"):
        convert(tmp_path, bad)


@pytest.mark.parametrize(("value", "status"), [
    ("C", "pass"), ("I", "fail"), ("N", "na"), (True, "pass"), (False, "fail"), (1, "pass"),
    (0, "fail"), (1.0, "pass"), (0.0, "fail"), ("P", None), (0.5, None), ({"a": 1}, None),
    ("correct", None)])
def test_score_values(value: object, status: str | None) -> None:
    assert label_of(value) == status


def test_a_sample_error_is_a_reject(tmp_path: Path, logs: dict[str, Path]) -> None:
    src = json.loads(logs["json"].read_text())
    src["samples"][0]["error"] = {"message": "boom", "traceback": "", "traceback_ansi": ""}
    path = tmp_path / "errored.json"
    path.write_text(json.dumps(src))
    result = convert(tmp_path, path)
    assert [(r["row"], r["id"], r["error"]) for r in result.rejects] == [
        (1, "2", "The sample ended in an error (boom); it has no answer to convert.")]


def test_a_broken_sample_with_nan_keeps_its_own_error(tmp_path: Path, logs: dict[str, Path]) -> None:
    # The rewritten text is read only to find the numbers: a sample broken otherwise is
    # rejected with the error of its own bytes.
    src, dst = logs["eval"], tmp_path / "broken.eval"
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as out:
        for info in z.infolist():
            data = _member(z, info)
            if info.filename == "samples/2_epoch_1.json":  # its NaN, then a bad last byte
                assert b"NaN" in data and data.endswith(b"}")
                data = data[:-1] + b"]"
                at = len(data) - 1
            out.writestr(info.filename, data)
    result = convert(tmp_path, dst)
    [reject] = result.rejects
    assert reject["error"].startswith("The sample `samples/2_epoch_1.json` cannot be read as an "
                                      "inspect_ai sample: JSON is malformed")
    assert f"(byte {at})" in reject["error"]
