"""``batch collect``, fail-closed: results in any order over any number of files, every result
type, inline string errors, a repeated answer, a conflicting one, unknown ids and missing
lines; every judge state ends as exactly one verdict or is listed as missing; the same bytes
on a second collect and for any order of the files; answers land in the live judge's store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstream._judge import inputs
from evalstream._judge.batch import collect
from evalstream._judge.providers import REGISTRY
from evalstream._judge.request import build
from evalstream._judge.store import Store
from evalstream._verdicts.records import Codes, RejectSink, read_verdicts
from evalstream.errors import InputError, OutputError, UsageError, WrongFileError
from tests.judge.batch.support import (
    EXPECTED,
    collected,
    config,
    lines,
    prepared,
    request_lines,
    results,
    write_split,
)
from tests.judge.support import states

MARKERS = list(EXPECTED)

# The providers whose batch form evalstream speaks (the others refuse `batch`).
BATCHED = [name for name, p in REGISTRY.items() if not p.batch_none]


@pytest.mark.parametrize("flavour", ["openai", "vllm", "anthropic"])
def test_round_trip_with_every_result_type_shuffled_over_files(tmp_path: Path,
                                                               flavour: str) -> None:
    provider = "anthropic" if flavour == "anthropic" else "openai"
    markers = MARKERS + ["FAKE:pass and more", "FAKE:fail again", "lost one", "lost two"]
    src = states(tmp_path / "in", markers)
    prepared(src, tmp_path / "b", provider)
    rows = results(tmp_path / "b", vllm=flavour == "vllm")
    by_marker = dict(zip(markers, rows, strict=True))
    kept = [r for m, (_, r) in by_marker.items() if not m.startswith("lost")]
    # A repeat of one answer (the same file content given again, as a provider's retry would)
    # and a second, different answer to another request; an id from another batch.
    repeat = dict(by_marker["FAKE:pass"][1])
    conflict = json.loads(json.dumps(by_marker["FAKE:fail"][1]))
    if provider == "anthropic":
        conflict["result"]["message"]["content"][0]["input"] = {"status": "pass",
                                                                "reason": "changed"}
    else:
        conflict["response"]["body"]["choices"][0]["message"]["content"] = json.dumps(
            {"status": "pass", "reason": "changed"})
    unknown = dict(repeat, custom_id="f" * 64)
    files = write_split(kept + [repeat], tmp_path / "results", parts=3)
    # The conflicting answer and the unknown id come in a file whose name sorts last.
    late = tmp_path / "results" / "zz-late.jsonl"
    late.write_text(json.dumps(conflict) + "\n" + json.dumps(unknown) + "\n" + "not json\n")
    report = collected(tmp_path / "b", tmp_path / "v.jsonl", [late, *files])

    verdicts = {(v["case_id"]): v for v in lines(tmp_path / "v.jsonl")}
    for i, marker in enumerate(markers):
        case_id = f"c{i:03d}"
        if marker.startswith("lost"):
            assert case_id not in verdicts
            continue
        v = verdicts[case_id]
        status, cause = EXPECTED[marker.split()[0]]
        assert (v["status"], (v.get("error") or {}).get("cause")) == (status, cause), marker
        if status == "unscored":
            assert v["rationale"] is None and v["error"]["detail"]
        else:
            assert v["rationale"].startswith(f"fake {status}")  # the first answer, kept
    # Every state is a verdict or listed as missing, with its line and reason.
    c = report.counts
    assert c.judge_states == c.verdicts + c.missing == len(markers)
    assert [(m.case_id, m.reason) for m in report.missing] == [
        (f"c{markers.index('lost one'):03d}", "no result"),
        (f"c{markers.index('lost two'):03d}", "no result")]
    assert report.exit_code == 3  # incomplete: states are missing
    res = report.results
    assert res.lines == res.blank + res.rejected + res.answers + res.repeats + res.failures
    assert (res.repeats, res.conflicts, res.unknown, res.blank) == (1, 1, 1, 3)
    assert res.rejected == 3  # the conflict, the unknown id, the line that is not JSON
    assert sum(report.by_type.values()) == res.answers + res.repeats + res.failures + res.conflicts
    rejects = lines(tmp_path / "v.rejects.jsonl")
    assert [(r["file"], r["line"]) for r in rejects] == [(str(late), 1), (str(late), 2),
                                                        (str(late), 3)]
    assert "already answered differently" in rejects[0]["error"]
    assert "is not a request of this batch" in rejects[1]["error"]
    assert "not valid JSON" in rejects[2]["error"]
    # The strict verdict reader (agree, compare) reads every line.
    read = read_verdicts(str(tmp_path / "v.jsonl"), Codes(), RejectSink(None))
    assert (read.summary.rejected, read.summary.verdicts) == (0, c.verdicts)


def test_collecting_twice_or_in_another_order_gives_the_same_bytes(tmp_path: Path) -> None:
    src = states(tmp_path / "in", MARKERS)
    prepared(src, tmp_path / "b")
    rows = [r for _, r in results(tmp_path / "b")]
    files = write_split(rows, tmp_path / "r", parts=4)
    first = collected(tmp_path / "b", tmp_path / "v1.jsonl", files)
    again = collected(tmp_path / "b", tmp_path / "v2.jsonl", files[::-1],
                      store=str(tmp_path / "v1.judge.sqlite"))
    fresh = collected(tmp_path / "b", tmp_path / "v3.jsonl", files[::-1])  # a new store
    assert (tmp_path / "v1.jsonl").read_bytes() == (tmp_path / "v2.jsonl").read_bytes() \
        == (tmp_path / "v3.jsonl").read_bytes()
    assert first.results.answers == fresh.results.answers == again.results.repeats
    # More than half of MARKERS' verdicts are unscored: above the default limit (0.5).
    assert first.by_status["unscored"] > sum(first.by_status.values()) / 2
    assert again.results.answers == 0 and again.exit_code == first.exit_code == 1


def test_missing_skip_leaves_failed_requests_out_and_lists_them(tmp_path: Path) -> None:
    markers = ["FAKE:pass", "FAKE:expired", "FAKE:batcherror", "FAKE:canceled"]
    src = states(tmp_path / "in", markers)
    prepared(src, tmp_path / "b", "anthropic")
    files = write_split([r for _, r in results(tmp_path / "b")], tmp_path / "r", parts=2)
    report = collected(tmp_path / "b", tmp_path / "v.jsonl", files, missing="skip")
    assert [v["case_id"] for v in lines(tmp_path / "v.jsonl")] == ["c000"]
    assert [(m.case_id, m.reason) for m in report.missing] == [
        ("c001", "expired"), ("c002", "errored"), ("c003", "canceled")]
    assert report.by_type == {"succeeded": 1, "errored": 1, "canceled": 1, "expired": 1}
    assert report.exit_code == 3


def test_a_failure_never_replaces_an_answer_and_a_later_answer_fills_a_failure(
        tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["FAKE:pass", "FAKE:fail"])
    prepared(src, tmp_path / "b")
    (ok0, _), (ok1, _) = [(r, f) for f, r in results(tmp_path / "b")]
    expired = [{"custom_id": r["custom_id"], "response": None,
                "error": {"code": "batch_expired", "message": "x"}} for r in (ok0, ok1)]
    # The expired batch's error file, then a retry's output answering one of them.
    a = tmp_path / "a-expired.jsonl"
    a.write_text("".join(json.dumps(x) + "\n" for x in expired))
    b = tmp_path / "b-retry.jsonl"
    b.write_text(json.dumps(ok1) + "\n")
    report = collected(tmp_path / "b", tmp_path / "v.jsonl", [b, a])
    got = [(v["status"], (v.get("error") or {}).get("cause")) for v in lines(tmp_path / "v.jsonl")]
    assert got == [("unscored", "expired"), ("fail", None)]
    assert report.exit_code == 0 and report.results.failures == 2


def test_the_store_is_the_live_judges_and_its_answer_is_kept(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["FAKE:pass", "FAKE:fail"])
    prepared(src, tmp_path / "b")
    rows = [r for _, r in results(tmp_path / "b")]
    # A live run already stored an answer for the first state: a different one.
    cfg = config()
    item = next(x for x in inputs.read(str(src)) if isinstance(x, inputs.JudgeState))
    key = build(cfg, item.question, item.state).key
    live = json.dumps({"id": "chatcmpl-live", "choices": [{"message": {
        "content": '{"status": "na", "reason": "live"}'}, "finish_reason": "stop"}]}).encode()
    store = Store(str(tmp_path / "v.judge.sqlite"))
    store.put(key, "openai", cfg.model, live, "req_live", 1, 1, 5.0, 1)
    store.close()
    files = write_split(rows, tmp_path / "r", parts=1)
    report = collected(tmp_path / "b", tmp_path / "v.jsonl", files)
    got = lines(tmp_path / "v.jsonl")
    assert (got[0]["status"], got[0]["rationale"], got[0]["request_id"]) == ("na", "live",
                                                                               "req_live")
    assert report.results.conflicts == 1 and report.exit_code == 1
    # Every answer is in the store under its request key, where `evalstream judge` looks.
    store = Store(str(tmp_path / "v.judge.sqlite"), readonly=True)
    assert all(store.has(r["custom_id"]) for r in rows) and store.count() == 2
    store.close()


@pytest.mark.parametrize("provider", BATCHED)
def test_a_custom_id_in_another_letter_case_is_unknown(tmp_path: Path, provider: str) -> None:
    """``bytes.fromhex`` reads upper case: such an id passed the manifest, was stored under a
    key no state has, and its state was then missing (issue 23). Now it is an unknown id."""
    src = states(tmp_path / "in", ["FAKE:pass", "FAKE:fail", "FAKE:na"])
    prepared(src, tmp_path / "b", provider)
    rows = [r for _, r in results(tmp_path / "b")]
    shouted = dict(rows[1], custom_id=rows[1]["custom_id"].upper())
    cid = rows[2]["custom_id"]
    at = next(i for i, c in enumerate(cid) if c in "abcdef")
    mixed = dict(rows[2], custom_id=cid[:at] + cid[at].upper() + cid[at + 1:])  # one letter
    files = write_split([rows[0], shouted, mixed], tmp_path / "r", parts=1)
    report = collected(tmp_path / "b", tmp_path / "v.jsonl", files)
    assert [v["case_id"] for v in lines(tmp_path / "v.jsonl")] == ["c000"]
    assert [(m.case_id, m.reason) for m in report.missing] == [("c001", "no result"),
                                                               ("c002", "no result")]
    assert (report.results.unknown, report.results.answers, report.exit_code) == (2, 1, 3)
    rejects = lines(tmp_path / "v.rejects.jsonl")
    assert [r["path"] for r in rejects] == ["$.custom_id", "$.custom_id"]
    assert all("differs from one of them in letter case only" in r["error"] for r in rejects)
    store = Store(str(tmp_path / "v.judge.sqlite"), readonly=True)
    assert store.count() == 1 and store.has(rows[0]["custom_id"])
    store.close()


@pytest.mark.parametrize("provider", BATCHED)
def test_a_result_whose_usage_sqlite_cannot_hold_is_collected(tmp_path: Path,
                                                              provider: str) -> None:
    src = states(tmp_path / "in", ["FAKE:pass", "FAKE:fail"])
    prepared(src, tmp_path / "b", provider)
    rows = [r for _, r in results(tmp_path / "b")]
    body = rows[1]["result"]["message"] if provider == "anthropic" else \
        rows[1]["response"]["body"]
    body["usage"]["input_tokens" if provider == "anthropic" else "prompt_tokens"] = 2**63 * 10
    files = write_split(rows, tmp_path / "r", parts=1)
    report = collected(tmp_path / "b", tmp_path / "v.jsonl", files)  # was exit 70
    assert report.exit_code == 0 and report.results.answers == 2
    got = lines(tmp_path / "v.jsonl")
    assert [v["status"] for v in got] == ["pass", "fail"]
    assert got[1]["usage"]["input_tokens"] == 2**63 * 10


@pytest.mark.parametrize("edit", ["damaged pages", "ALTER TABLE states RENAME COLUMN digits TO d",
                                  "UPDATE states SET custom_id = 'text'",
                                  "DELETE FROM meta WHERE name = 'model'"])
def test_a_damaged_manifest_is_a_sentence_naming_it(tmp_path: Path, edit: str) -> None:
    """Pages damaged under an intact header, or a manifest another program changed, were
    exit 70 with a traceback (issue 23)."""
    import sqlite3

    src = states(tmp_path / "in", ["FAKE:pass", "FAKE:fail"])
    prepared(src, tmp_path / "b")
    files = write_split([r for _, r in results(tmp_path / "b")], tmp_path / "r", parts=1)
    manifest = tmp_path / "b" / "manifest.sqlite"
    db = sqlite3.connect(manifest, isolation_level=None)
    if edit == "damaged pages":
        roots = [r for (r,) in db.execute("SELECT rootpage FROM sqlite_master WHERE tbl_name IN "
                                          "('states', 'requests')")]
        (size,) = db.execute("PRAGMA page_size").fetchone()
        db.close()
        with open(manifest, "r+b") as f:
            for root in roots:
                f.seek((root - 1) * size)
                f.write(bytes(range(256)) * (size // 256))
    else:
        db.execute(edit)
        db.close()
    with pytest.raises(InputError, match=f"the batch manifest {manifest} .*: it is damaged, or "
                       "another program changed it. Restore it from a copy"):
        collected(tmp_path / "b", tmp_path / "v.jsonl", files)
    assert not (tmp_path / "v.jsonl").exists()


def test_a_request_file_given_as_results_is_one_sentence(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a", "b"])
    prepared(src, tmp_path / "b")
    with pytest.raises(WrongFileError, match="looks like a batch request file"):
        collected(tmp_path / "b", tmp_path / "v.jsonl", [tmp_path / "b" / "requests-00001.jsonl"])
    assert not (tmp_path / "v.jsonl").exists()
    # A request line among results (a file made by hand) is a reject of its own.
    mixed = tmp_path / "mixed.jsonl"
    rows = [r for _, r in results(tmp_path / "b")]
    request = (tmp_path / "b" / "requests-00001.jsonl").read_text().splitlines()[1]
    mixed.write_text(json.dumps(rows[0]) + "\n" + request + "\n")
    report = collected(tmp_path / "b", tmp_path / "v.jsonl", [mixed])
    assert report.results.rejected == 1 and report.counts.missing == 1
    assert report.rejected_by_kind == {"not a result": 1}
    assert "This is a request line" in lines(tmp_path / "v.rejects.jsonl")[0]["error"]


def test_results_of_the_other_provider_are_rejected(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a"])
    prepared(src, tmp_path / "oa", "openai")
    prepared(src, tmp_path / "an", "anthropic")
    files = write_split([r for _, r in results(tmp_path / "an")], tmp_path / "r", parts=1)
    report = collected(tmp_path / "oa", tmp_path / "v.jsonl", files)
    assert report.results.rejected == 1 and report.exit_code == 3
    assert "prepared for openai" in lines(tmp_path / "v.rejects.jsonl")[0]["error"]


def test_exact_verdicts_pass_through_in_their_places(tmp_path: Path) -> None:
    from evalstream._build.run import Options as BuildOptions
    from evalstream._build.run import run as build_run
    from tests.helpers import SAMPLES

    src = tmp_path / "states.jsonl"
    build_run(BuildOptions(input=str(SAMPLES / "cases.jsonl"), output=str(src)))
    prepared(src, tmp_path / "b")
    files = write_split([r for _, r in results(tmp_path / "b")], tmp_path / "r", parts=5)
    report = collected(tmp_path / "b", tmp_path / "v.jsonl", files)
    inputs_ = src.read_bytes().splitlines()
    outputs = (tmp_path / "v.jsonl").read_bytes().splitlines()
    assert len(outputs) == len(inputs_) and report.exit_code == 0
    for before, after in zip(inputs_, outputs, strict=True):
        record, verdict = json.loads(before), json.loads(after)
        if record.get("kind") == "exact":
            assert after == before
        else:
            assert (verdict["case_id"], verdict["rubric_id"], verdict["state_hash"],
                    verdict["exposure"]) == (record["case_id"], record["rubric_id"],
                                             record["state_hash"], record["exposure"])


def test_cost_and_usage_at_batch_prices(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["FAKE:pass", "FAKE:fail"])
    prepared(src, tmp_path / "b")
    rows = [r for _, r in results(tmp_path / "b")]
    files = write_split(rows, tmp_path / "r", parts=1)
    report = collected(tmp_path / "b", tmp_path / "v.jsonl", files, price_in=1.25,
                       price_out=5.0)
    tokens_in = sum(r["response"]["body"]["usage"]["prompt_tokens"] for r in rows)
    tokens_out = sum(r["response"]["body"]["usage"]["completion_tokens"] for r in rows)
    assert (report.usage_all.input_tokens, report.usage_all.output_tokens) == (tokens_in,
                                                                               tokens_out)
    assert report.cost_usd == round((tokens_in * 1.25 + tokens_out * 5.0) / 1e6, 6)


def test_unscored_above_the_rate_exits_1(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["FAKE:pass", "FAKE:notjson"])
    prepared(src, tmp_path / "b")
    files = write_split([r for _, r in results(tmp_path / "b")], tmp_path / "r", parts=1)
    assert collected(tmp_path / "b", tmp_path / "v.jsonl", files,
                     max_unscored_rate=0.4).exit_code == 1
    assert collected(tmp_path / "b", tmp_path / "w.jsonl", files,
                     max_unscored_rate=0.5).exit_code == 0
    # No result line was rejected: no rejects file beside the verdicts (issue 25).
    assert not (tmp_path / "v.rejects.jsonl").exists()


@pytest.mark.parametrize("provider", BATCHED)
def test_na_where_the_rubric_does_not_allow_it_is_unscored(tmp_path: Path,
                                                           provider: str) -> None:
    from tests.judge.support import RUBRIC

    src = states(tmp_path / "in", ["FAKE:na", "FAKE:pass"], RUBRIC + "allows_na = false\n")
    prepared(src, tmp_path / "b", provider)
    assert all(b'"enum":["pass","fail"]' in line["_body"] for line in
               request_lines(tmp_path / "b"))
    files = write_split([r for _, r in results(tmp_path / "b")], tmp_path / "r", parts=1)
    collected(tmp_path / "b", tmp_path / "v.jsonl", files)
    first, second = lines(tmp_path / "v.jsonl")
    assert (first["status"], first["error"]["cause"]) == ("unscored", "na_not_allowed")
    assert second["status"] == "pass"


def test_a_collect_with_every_verdict_unscored_never_exits_0(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["FAKE:notjson", "FAKE:400 (a)"])
    prepared(src, tmp_path / "b")
    files = write_split([r for _, r in results(tmp_path / "b")], tmp_path / "r", parts=1)
    report = collected(tmp_path / "b", tmp_path / "v.jsonl", files, max_unscored_rate=None)
    assert report.by_status["unscored"] == 2 and report.exit_code == 1
    assert report.rejects is None


def test_without_result_files_collect_says_where_to_get_them(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a"])
    prepared(src, tmp_path / "b")
    with pytest.raises(UsageError, match="batch status"):
        collect.run(collect.Options(folder=str(tmp_path / "b"), output=str(tmp_path / "v.jsonl")))
    assert not (tmp_path / "v.jsonl").exists()


def test_only_missing_prepares_what_never_came_back(tmp_path: Path) -> None:
    markers = ["FAKE:pass", "FAKE:expired", "lost", "FAKE:notjson", "FAKE:batcherror"]
    src = states(tmp_path / "in", markers)
    prepared(src, tmp_path / "b1")
    rows = [r for m, (_, r) in zip(markers, results(tmp_path / "b1"), strict=True)
            if m != "lost"]
    files = write_split(rows, tmp_path / "r", parts=2)
    first = collected(tmp_path / "b1", tmp_path / "v.jsonl", files)
    assert first.counts.missing == 1
    second = prepared(src, tmp_path / "b2", only_missing=str(tmp_path / "b1"))
    # The pass and the not-JSON answer came back (an unusable answer is still an answer, as
    # in a live run); the expired, the errored and the lost one are asked again.
    assert (second.counts.requests, second.counts.stored) == (3, 2)
    rows2 = [r for _, r in results(tmp_path / "b2")]
    files2 = write_split(rows2, tmp_path / "r2", parts=1)
    done = collected(tmp_path / "b2", tmp_path / "v2.jsonl", files2)
    # The second folder's collect writes every state: the first batch's answers come from the
    # store prepare consulted.
    assert done.store == str(tmp_path / "v.judge.sqlite")
    assert done.counts.verdicts == 5 and done.counts.missing == 0
    got = [(v["status"], (v.get("error") or {}).get("cause")) for v in lines(tmp_path / "v2.jsonl")]
    assert got[0] == ("pass", None) and got[3] == ("unscored", "not_json")


def test_paths_may_not_collide(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a"])
    prepared(src, tmp_path / "b")
    files = write_split([r for _, r in results(tmp_path / "b")], tmp_path / "r", parts=1)
    with pytest.raises(UsageError, match="same file"):
        collected(tmp_path / "b", files[0], files)
    with pytest.raises(UsageError, match="same file"):
        collected(tmp_path / "b", tmp_path / "v.jsonl", files, report=str(tmp_path / "v.jsonl"))


# -- what collect may write over (issue 23, item 5) ------------------------------------------------
def _ready(tmp_path: Path) -> list[Path]:
    src = states(tmp_path / "in", ["FAKE:pass", "FAKE:fail"])
    prepared(src, tmp_path / "b")
    return write_split([r for _, r in results(tmp_path / "b")], tmp_path / "r", parts=1)


def test_two_targets_naming_one_new_file_through_a_symlinked_folder_are_refused(
        tmp_path: Path) -> None:
    files = _ready(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    for more in ({"report": str(tmp_path / "link" / "v.jsonl")},
                 {"rejects": str(tmp_path / "link" / "v.jsonl")},
                 {"store": str(tmp_path / "link" / "v.jsonl")}):
        with pytest.raises(UsageError, match="are the same file"):
            collected(tmp_path / "b", tmp_path / "real" / "v.jsonl", files, **more)
        assert list((tmp_path / "real").iterdir()) == []
    # A result file named as a target through the link: an input, refused as one.
    (tmp_path / "real" / "results.jsonl").write_bytes(files[0].read_bytes())
    with pytest.raises(UsageError, match="would replace its own input"):
        collected(tmp_path / "b", tmp_path / "link" / "results.jsonl",
                  [tmp_path / "real" / "results.jsonl"])


@pytest.mark.parametrize("role", ["output", "rejects", "report"])
def test_a_target_holding_something_else_is_refused_unless_force(tmp_path: Path,
                                                                 role: str) -> None:
    files = _ready(tmp_path)
    held = {"output": tmp_path / "in" / "cases.jsonl",  # cases, with their labels
            "rejects": tmp_path / "in" / "states.jsonl",  # build's judge states
            "report": tmp_path / "notes.json"}[role]  # a user's JSON
    if role == "report":
        held.write_text('{"my": "notes"}\n')
    before = held.read_bytes()
    paths = {"output": tmp_path / "v.jsonl", "rejects": tmp_path / "v.rejects.jsonl",
             "report": tmp_path / "v.report.json", role: held}
    kw = {k: str(v) for k, v in paths.items() if k != "output"}
    with pytest.raises(UsageError, match=rf"{held.name} holds .* give --force to replace it"):
        collected(tmp_path / "b", paths["output"], files, **kw)
    assert held.read_bytes() == before
    assert not (tmp_path / "v.jsonl").exists() or role == "output"
    done = collected(tmp_path / "b", paths["output"], files, force=True, **kw)
    assert done.exit_code == 0 and held.read_bytes() != before


def test_a_second_collect_replaces_its_own_outputs(tmp_path: Path) -> None:
    files = _ready(tmp_path)
    first = collected(tmp_path / "b", tmp_path / "v.jsonl", files)
    data = (tmp_path / "v.jsonl").read_bytes()
    again = collected(tmp_path / "b", tmp_path / "v.jsonl", files)
    assert again.exit_code == first.exit_code == 0
    assert (tmp_path / "v.jsonl").read_bytes() == data


def test_the_command_line_takes_force(tmp_path: Path) -> None:
    from evalstream._cli import main

    files = _ready(tmp_path)
    cases = tmp_path / "in" / "cases.jsonl"
    before = cases.read_bytes()
    args = ["batch", "collect", str(tmp_path / "b"), str(cases), *map(str, files), "-q"]
    assert main(args) == 2 and cases.read_bytes() == before
    assert main([*args, "--force"]) == 0 and cases.read_bytes() != before


def test_a_target_that_cannot_be_created_leaves_no_temporary(tmp_path: Path) -> None:
    src = states(tmp_path / "in", MARKERS)
    prepared(src, tmp_path / "b")
    files = write_split([r for _, r in results(tmp_path / "b")], tmp_path / "r", parts=1)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(OutputError, match="cannot create .*gone/r.json"):
        collected(tmp_path / "b", out / "v.jsonl", files, report=str(tmp_path / "gone" / "r.json"))
    assert sorted(p.name for p in out.iterdir()) == ["v.judge.sqlite"]
