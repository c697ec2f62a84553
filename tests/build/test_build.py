"""build end to end: golden outputs, nothing lost, byte-identical reruns, the budget, exposure."""

from __future__ import annotations

import gzip
import io
import json
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
import xxhash
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstream._build.run import Options, run
from evalstream._checks import rubrics
from evalstream._checks.state import (
    PREAMBLE,
    STATE_NAMES,
    CheckRecord,
    ExactVerdict,
    answer_instruction,
    question_text,
    system_text,
)
from evalstream._checks.tokens import FRAMING
from evalstream.errors import UsageError
from tests.helpers import SAMPLES, build, golden, oracle_count


def stable_report(path: Path) -> dict[str, Any]:
    report = json.loads(path.read_text())
    for key in ("seconds", "input", "output", "rejects", "report"):
        report.pop(key)
    return report


def test_samples_golden(tmp_path: Path) -> None:
    out = tmp_path / "states.jsonl"
    report, _ = run(Options(input=str(SAMPLES / "cases.jsonl"), output=str(out)))
    assert report.exit_code == 0
    golden("samples.states.jsonl", out.read_bytes())
    golden("samples.report.json",
           (json.dumps(stable_report(tmp_path / "states.report.json"), indent=2) + "\n").encode())
    assert not (tmp_path / "states.rejects.jsonl").exists()  # nothing rejected, none asked


def test_sample_rubric_file_golden(tmp_path: Path) -> None:
    out = tmp_path / "states.jsonl"
    run(Options(input=str(SAMPLES / "cases.jsonl"), output=str(out),
                rubric_files=[str(SAMPLES / "rubrics.toml")]))
    golden("samples.rubrics-toml.states.jsonl", out.read_bytes())


def test_bad_samples_golden_rejects(tmp_path: Path) -> None:
    out = tmp_path / "states.jsonl"
    report, _ = run(Options(input=str(SAMPLES / "bad.jsonl"), output=str(out)))
    golden("bad.rejects.jsonl", (tmp_path / "states.rejects.jsonl").read_bytes())
    c = report.counts
    assert (c.lines, c.blank, c.cases, c.rejected) == (24, 2, 1, 21)
    assert report.exit_code == 1


def test_seed_case_17(tmp_path: Path) -> None:
    out = tmp_path / "states.jsonl"
    run(Options(input=str(SAMPLES / "cases.jsonl"), output=str(out)))
    records = [json.loads(x) for x in out.read_text().splitlines()]
    claim = next(r for r in records if (r["case_id"], r["rubric_id"]) == ("case-17", "tool-backed-claims"))
    assert claim["state"] == {
        "user_input": "Book me for Thursday 2pm.",
        "assistant_response": "All set for Thursday at 14:00.",
        "tool_events": [{"id": "t1", "name": "book_appointment", "status": "failure",
                         "error": "SLOT_UNAVAILABLE"}]}
    assert claim["exposure"]["shown"] == ["user_input", "assistant_response", "tool_events"]
    assert claim["exposure"]["withheld"] == ["policy"]
    assert claim["exposure"]["never_shown"] == ["expected", "metadata"]
    assert claim["question"].startswith(PREAMBLE + "\n\n")
    exact = next(r for r in records
                 if (r["case_id"], r["rubric_id"]) == ("case-17", "booking-succeeded"))
    assert (exact["kind"], exact["status"], exact["evidence"]) == ("exact", "fail", ["t1"])


def test_reruns_are_byte_identical(tmp_path: Path) -> None:
    outs = []
    for n in range(2):
        out = tmp_path / f"run{n}.jsonl"
        run(Options(input=str(SAMPLES / "cases.jsonl"), output=str(out)))
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0]


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
def test_compressed_input_and_output(tmp_path: Path, suffix: str) -> None:
    plain = (SAMPLES / "cases.jsonl").read_bytes()
    packed = gzip.compress(plain) if suffix == ".gz" else zstandard.compress(plain)
    src = tmp_path / f"cases.jsonl{suffix}"
    src.write_bytes(packed)
    run(Options(input=str(SAMPLES / "cases.jsonl"), output=str(tmp_path / "ref.jsonl")))
    out = tmp_path / f"states.jsonl{suffix}"
    run(Options(input=str(src), output=str(out)))
    raw = out.read_bytes()
    unpacked = (gzip.decompress(raw) if suffix == ".gz"
                else zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)).read())
    assert unpacked == (tmp_path / "ref.jsonl").read_bytes()
    assert (tmp_path / "states.report.json").exists()  # sidecar drops .jsonl.gz / .jsonl.zst


def test_nothing_lost_and_counts_add_up(tmp_path: Path) -> None:
    lines = (SAMPLES / "cases.jsonl").read_bytes() + (SAMPLES / "bad.jsonl").read_bytes()
    report, out = build(tmp_path, lines)
    c = report.counts
    rejects = [json.loads(x) for x in (tmp_path / "states.rejects.jsonl").read_text().splitlines()]
    assert c.lines == c.blank + c.cases + c.rejected == lines.count(b"\n")
    assert len(rejects) == c.rejected
    assert [r["line"] for r in rejects] == sorted(r["line"] for r in rejects)
    records = out.read_bytes().splitlines()
    assert len(records) == c.checks
    case_ids = {json.loads(r)["case_id"] for r in records}
    assert not case_ids & {r["id"] for r in rejects if r["id"] not in (None, "dup-1")}
    assert sum(report.checks_by_rubric.values()) == c.checks
    assert sum(n for reasons in report.skipped.values() for n in reasons.values()) == c.skipped
    # Every (case, rubric) pair is either written or skipped, exactly once.
    assert c.checks + c.skipped == c.cases * len(report.rubrics.ids)  # type: ignore[union-attr]
    raw_lines = lines.split(b"\n")
    for r in rejects:  # offsets point at the rejected line
        assert lines[r["offset"]:].startswith(raw_lines[r["line"] - 1])


def test_rejects_and_duplicates_name_the_first_line(tmp_path: Path) -> None:
    report, out = build(tmp_path, ['{"id":"a","input":"x","output":"y"}',
                                   '{"id":"b","input":"x","output":"y"}',
                                   '{"id":"a","input":"other","output":"z"}'])
    (rej,) = [json.loads(x) for x in (tmp_path / "states.rejects.jsonl").read_text().splitlines()]
    assert (rej["line"], rej["id"], rej["path"]) == (3, "a", "$.id")
    assert rej["error"] == ("Case id 'a' was already used on line 1; case ids must be unique "
                            "in a dataset.")
    assert report.counts.cases == 2


def test_duplicates_across_chunks(tmp_path: Path) -> None:
    # Enough lines to span several 1 MiB blocks, with repeats far apart.
    lines = [f'{{"id":"c{i}","input":"{"x" * 300}","output":"y"}}' for i in range(8000)]
    lines += ['{"id":"c5","input":"x","output":"y"}', '{"id":"c7999","input":"x","output":"y"}']
    report, _ = build(tmp_path, lines)
    rejects = [json.loads(x) for x in (tmp_path / "states.rejects.jsonl").read_text().splitlines()]
    assert [(r["line"], r["error"].split(";")[0]) for r in rejects] == [
        (8001, "Case id 'c5' was already used on line 6"),
        (8002, "Case id 'c7999' was already used on line 8000")]


def huge_case(n_chars: int) -> str:
    return json.dumps({"id": "big", "input": "hi", "output": "ok",
                       "context": [{"id": "c1", "text": "word " * (n_chars // 5)}]})


def builtin_questions() -> list[str]:
    """What the budget counts of each judge rubric: its whole system text (the question after
    the preamble, then the answer instruction), as the judge sends it."""
    return [system_text(question_text(r.question), r.allows_na) for r in rubrics.builtin().rubrics
            if r.kind == "judge"]


def reserved(tokenizer: str = "o200k_base", output: int = 1_024) -> dict[str, int]:
    return {"framing": FRAMING[tokenizer], "output": output}


def state_text(record: dict[str, Any]) -> str:
    return msgspec.json.encode(record["state"]).decode()


def test_over_budget_is_counted_never_cut(tmp_path: Path) -> None:
    report, out = build(tmp_path, [huge_case(100), huge_case(100_000).replace('"big"', '"big2"')],
                        max_tokens=4_000)
    written = [json.loads(x) for x in out.read_text().splitlines()]
    # big2's passages are shown by claim-support and faithfulness: both over, neither cut.
    assert all(r["case_id"] == "big" or "reference_material" not in r["state"]
               for r in written)
    assert report.skipped["claim-support"]["over budget"] == 1
    assert [o.rubric_id for o in report.over_budget] == ["claim-support", "faithfulness"]
    over = report.over_budget[0]
    assert (over.line, over.case_id, over.rubric_id) == (2, "big2", "claim-support")
    state = json.dumps({"user_input": "hi", "assistant_response": "ok",
                        "reference_material": [{"id": "c1", "text": "word " * 20_000}]},
                       separators=(",", ":"))
    exact_total = oracle_count(state) + max(map(oracle_count, builtin_questions()))
    # Counting stopped once the state alone was past the budget: a true lower bound.
    assert not over.exact
    assert 4_000 < over.tokens <= exact_total


@pytest.mark.parametrize("tokenizer", ["o200k_base", "cl100k_base"])
def test_exact_count_when_bytes_exceed_the_room(tmp_path: Path, tokenizer: str) -> None:
    # ~2,600 bytes of state against a 2,000-token budget: counted exactly, and it fits.
    report, out = build(tmp_path, [huge_case(2_500)], max_tokens=2_000, tokenizer=tokenizer,
                        max_output_tokens=256)
    (rec,) = [r for r in map(json.loads, out.read_text().splitlines())
              if r["rubric_id"] == "claim-support"]
    t = rec["exposure"]["tokens"]
    state = state_text(rec)
    longest = max(oracle_count(q, tokenizer) for q in builtin_questions())
    longest_bytes = max(len(q.encode()) for q in builtin_questions())
    assert t == {"tokenizer": tokenizer, "budget": 2_000,
                 "bytes": {"state": len(state.encode()), "longest_question": longest_bytes,
                           "total": len(state.encode()) + longest_bytes},
                 "exact": {"state": oracle_count(state, tokenizer), "longest_question": longest,
                           "total": oracle_count(state, tokenizer) + longest},
                 "reserved": reserved(tokenizer, 256)}
    held = FRAMING[tokenizer] + 256
    assert t["exact"]["total"] + held <= 2_000 < t["bytes"]["total"] + held
    assert report.tokenizer == tokenizer


def test_byte_sizes_are_never_called_tokens(tmp_path: Path) -> None:
    """States that fit in bytes carry their UTF-8 sizes under `bytes` (upper bounds of the
    token counts in both encodings) and no token figure at all."""
    _, out = build(tmp_path, (SAMPLES / "cases.jsonl").read_text().splitlines())
    longest = max(len(q.encode()) for q in builtin_questions())
    judged = 0
    for rec in map(json.loads, out.read_text().splitlines()):
        t = rec["exposure"].get("tokens")
        if rec.get("kind") == "exact":
            assert t is None
            continue
        judged += 1
        assert list(t) == ["tokenizer", "budget", "bytes", "reserved"]
        assert t["reserved"] == reserved()
        size = len(state_text(rec).encode())
        assert t["bytes"] == {"state": size, "longest_question": longest, "total": size + longest}
        for name in ("o200k_base", "cl100k_base"):
            assert size >= oracle_count(state_text(rec), name)
            assert longest >= oracle_count(rec["question"], name) + oracle_count(
                answer_instruction(rec.get("allows_na", True)), name)
    assert judged == 236


def test_exact_tokens_counts_every_state_and_changes_no_decision(tmp_path: Path) -> None:
    lines = (SAMPLES / "cases.jsonl").read_text().splitlines() + [huge_case(200_000)]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain, out = build(tmp_path / "a", lines, max_tokens=8_000)
    exact, out_exact = build(tmp_path / "b", lines, max_tokens=8_000, exact_tokens=True)
    a = [json.loads(x) for x in out.read_text().splitlines()]
    b = [json.loads(x) for x in out_exact.read_text().splitlines()]
    longest = max(oracle_count(q) for q in builtin_questions())
    assert [(r["case_id"], r["rubric_id"]) for r in a] == [(r["case_id"], r["rubric_id"]) for r in b]
    for ra, rb in zip(a, b, strict=True):
        if rb.get("kind") == "exact":
            assert ra == rb
            continue
        ta, tb = ra["exposure"].pop("tokens"), rb["exposure"].pop("tokens")
        assert ra == rb  # the same record but for its token figures
        assert ta["bytes"] == tb["bytes"]
        n = oracle_count(state_text(rb))
        assert tb["exact"] == {"state": n, "longest_question": longest, "total": n + longest}
    assert plain.skipped == exact.skipped and plain.counts == exact.counts
    # Over budget: counted to the end with --exact-tokens, an exact figure.
    (over,) = [o for o in exact.over_budget if o.rubric_id == "claim-support"]
    (early,) = [o for o in plain.over_budget if o.rubric_id == "claim-support"]
    assert over.exact and not early.exact
    assert 8_000 < early.tokens <= over.tokens


def test_a_warm_or_tiny_cache_writes_the_same_bytes(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The piece-count cache lives as long as the process: a second build, and a build with a
    cache of one entry, write exactly what a first build does."""
    from evalstream._checks import tokens

    messages = [{"id": f"m{i}", "role": "user", "content": f"word{i % 7} " * 400}
                for i in range(30)]
    lines = [json.dumps({"id": f"c{i}", "input": "hi", "output": "ok", "messages": messages,
                         "policy": "The policy. " * (200 * (i % 3 + 1))}) for i in range(12)]
    outputs = []
    for run_no, entries in enumerate([None, None, 1]):
        if entries is not None:
            monkeypatch.setattr(tokens, "CACHE_ENTRIES", entries)
            tokens.piece_counts.cache_clear()
        folder = tmp_path / str(run_no)
        folder.mkdir()
        _, out = build(folder, lines, max_tokens=4_000)
        report = json.loads((folder / "states.report.json").read_text())
        outputs.append((out.read_bytes(), report["over_budget"], report["skipped"]))
    tokens.piece_counts.cache_clear()
    assert outputs[0] == outputs[1] == outputs[2]
    assert outputs[0][1]  # some states were over budget: counting stopped early


def test_output_equal_to_input_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "cases.jsonl"
    src.write_bytes((SAMPLES / "cases.jsonl").read_bytes())
    with pytest.raises(UsageError, match="input and output paths are the same file"):
        run(Options(input=str(src), output=str(src)))
    assert src.read_bytes() == (SAMPLES / "cases.jsonl").read_bytes()


def test_to_stdout_writes_no_sidecar_unless_asked(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Output on stdout: the rejects and the report go nowhere unless asked (not next to the
    # input: a dataset folder may be read-only, and is not the output's place).
    src = tmp_path / "data" / "cases.jsonl"
    src.parent.mkdir()
    src.write_bytes((SAMPLES / "bad.jsonl").read_bytes())
    monkeypatch.chdir(tmp_path)
    report, _ = run(Options(input=str(src), output=os.devnull))
    assert report.rejects is None and report.report is None and report.counts.rejected == 21
    assert sorted(p.name for p in src.parent.iterdir()) == ["cases.jsonl"]


# -- exposure: never expected, never metadata -----------------------------------------------
MARK = "MARKER-7f3a"
text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@st.composite
def cases(draw: Any, n: int) -> dict[str, Any]:
    # Ids that JSON must escape too ("\\", '"', controls), kept unique by the number.
    odd = draw(st.text(st.sampled_from('"\\\x01\x7fé😀<>'), max_size=3))
    case: dict[str, Any] = {"id": f"case-{n}{odd}", "input": draw(text), "output": draw(text)}
    if draw(st.booleans()):
        case["messages"] = [{"id": f"m{i}", "role": draw(st.sampled_from(
            ["system", "user", "assistant", "tool"])), "content": draw(text)}
            for i in range(draw(st.integers(0, 3)))]
    if draw(st.booleans()):
        case["context"] = [{"id": f"c{i}", "text": draw(text)} for i in range(draw(st.integers(0, 3)))]
    if draw(st.booleans()):
        case["policy"] = draw(text)
    if draw(st.booleans()):
        case["toolEvents"] = [
            {"id": f"t{i}", "name": draw(st.sampled_from(["book_appointment", "lookup"])),
             "status": draw(st.sampled_from(["success", "failure"])),
             "input": draw(st.one_of(text, st.dictionaries(text, text, max_size=2))),
             "output": draw(text)} for i in range(draw(st.integers(0, 3)))]
    if draw(st.booleans()):
        case["metadata"] = {"scenario": draw(st.sampled_from(["booking", "rag", MARK])),
                            "note": MARK + draw(text), MARK: {"deep": MARK}}
    if draw(st.booleans()):
        case["expected"] = {MARK: {"status": "pass", "source": "human"},
                            "tool-backed-claims": {"status": "fail", "source": "synthetic"}}
    return case


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_states_hold_exactly_what_the_rubric_shows(tmp_path: Path, data: Any) -> None:
    dataset = [data.draw(cases(n)) for n in range(data.draw(st.integers(1, 6)))]
    report, out = build(tmp_path, [json.dumps(c) for c in dataset])
    assert report.counts.cases == len(dataset)
    shows = {"tool-backed-claims": {"user_input", "assistant_response", "conversation", "tool_events"},
             "claim-support": {"user_input", "assistant_response", "reference_material"},
             "policy-compliance": {"user_input", "assistant_response", "conversation", "policy",
                                   "tool_events"},
             "escalation": {"user_input", "assistant_response", "conversation", "policy"},
             "task-success": {"user_input", "assistant_response", "conversation", "policy",
                              "tool_events"},
             "booking-claim": {"user_input", "assistant_response", "conversation",
                               "tool_events"},
             "faithfulness": {"user_input", "assistant_response", "reference_material"},
             "instruction-following": {"user_input", "assistant_response", "conversation"}}
    field_of = dict(zip(STATE_NAMES, ["input", "output", "messages", "context", "policy",
                                      "toolEvents"], strict=True))
    by_id = {c["id"]: c for c in dataset}
    raw = out.read_bytes()
    assert MARK.encode() not in raw
    for rec in map(json.loads, raw.splitlines()):
        case = by_id[rec["case_id"]]
        if rec.get("kind") == "exact":
            continue
        has = {name for name, f in field_of.items() if f in case}
        assert set(rec["state"]) == shows[rec["rubric_id"]] & has
        for name, value in rec["state"].items():
            assert value == case[field_of[name]]  # copied exactly
        assert set(rec["exposure"]["withheld"]) == has - set(rec["state"])
        assert rec["exposure"]["never_shown"] == [f for f in ("expected", "metadata") if f in case]
    for line in raw.splitlines():
        # build appends records in pieces (RecordLayout): each must be the Struct's encoding.
        exact = json.loads(line).get("kind") == "exact"
        record = msgspec.json.decode(line, type=ExactVerdict if exact else CheckRecord)
        assert msgspec.json.encode(record) == line
        if not exact:
            assert record.state_hash == xxhash.xxh3_128_hexdigest(bytes(record.state))


def test_over_budget_reports_a_lower_bound_when_counting_stopped(tmp_path: Path) -> None:
    messages = [{"id": f"m{i}", "role": "user", "content": "lorem ipsum dolor " * 500}
                for i in range(40)]
    line = json.dumps({"id": "long", "input": "hi", "output": "ok", "messages": messages,
                       "policy": "p"})
    report, _ = build(tmp_path, [line], max_tokens=5_000)
    assert report.skipped["escalation"]["over budget"] == 1
    over = {o.rubric_id: o for o in report.over_budget}
    assert not over["escalation"].exact
    state = json.dumps({"user_input": "hi", "assistant_response": "ok", "conversation": messages,
                        "policy": "p"}, separators=(",", ":"))
    assert 5_000 < over["escalation"].tokens < oracle_count(state)


def test_warnings_say_what_can_never_be_judged(tmp_path: Path) -> None:
    labelled = ('{"id":"a","input":"x","output":"y","metadata":{"scenari":"rag"},'
                '"expected":{"nope":{"status":"pass","source":"human"},'
                '"claim-support":{"status":"fail","source":"human"}}}')
    report, _ = build(tmp_path, [labelled])
    # The report never names harness data (metadata keys, label ids): stats does.
    assert report.warnings == [
        "no case has metadata key `scenario`, named by a `when` rule: the rubrics that use it "
        "never apply. (`evalstream stats` lists the keys the cases have)",
        "1 label names a rubric that is not in the rubric set: no judge of this set can be "
        "compared with them.",
        "1 label is on cases where their rubric does not apply: no judge will ever see those "
        "checks, so the labels cannot be compared."]
    from evalstream._stats.stats import StatsOptions, collect

    s = collect(StatsOptions(input=str(tmp_path / "cases.jsonl")))
    assert "Did you mean `scenari`?" in s.warnings[0]
    assert any("not in the rubric set (nope)" in w for w in s.warnings)
    tight, _ = build(tmp_path, ['{"id":"a","input":"x","output":"y"}'], max_tokens=200)
    assert tight.warnings[0].startswith("--max-tokens 200 leaves no room for a judge state: "
                                        "the longest question and the answer instruction take ")
