"""``--from otel``: production traces to cases, from OTLP JSON written by real instrumentation
(``otel_traces.py``: the openai client instrumented by opentelemetry-instrumentation-openai-v2
calling the fake judge, exported by the SDK); every trace a case, a reject with a sentence,
or counted blank, checked against a plain reading of the file; and the ways a real file
differs (a trace split over lines, its root in a later line or missing, late spans, content
on an event, content not recorded, logs in the file), made from the real file."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from evalstream._convert import Options, run
from evalstream._files.sniff import check_cases_input
from evalstream.errors import WrongFileError
from tests.convert.otel_traces import write_traces_apart
from tests.convert.support import GOLDEN, convert, validate_accepts
from tests.helpers import ROOT, golden

# Slow as a module: the traces are written by an instrumented application (seconds).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_traces_apart(tmp_path_factory.mktemp("otel") / "traces.jsonl")


# -- a plain reading of the file: the oracle ------------------------------------------------------
def _value(v: dict[str, Any]) -> Any:
    (kind, inner), = v.items()
    if kind == "intValue":
        return int(inner)
    if kind == "arrayValue":
        return [_value(x) for x in inner.get("values", [])]
    return inner


def _spans(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Every span of the file by trace id, its attributes as a plain dict."""
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        for group in json.loads(line)["resourceSpans"]:
            for scoped in group["scopeSpans"]:
                for span in scoped["spans"]:
                    attrs = {a["key"]: _value(a["value"]) for a in span.get("attributes", [])}
                    found[span["traceId"]].append({**span, "attrs": attrs})
    return found


def _by_operation(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return sorted((s for s in spans if s["attrs"].get("gen_ai.operation.name") == name),
                  key=lambda s: int(s["endTimeUnixNano"]))


def test_every_trace_is_a_case_a_reject_or_blank(tmp_path: Path, traces: Path) -> None:
    result = convert(tmp_path, traces)
    assert result.report.format == "otel"
    assert result.report.inferred == "its first line: an OTLP `resourceSpans` export in a .jsonl"
    oracle = _spans(traces)
    assert result.report.counts.rows == len(oracle) == 5
    genai = {t for t, spans in oracle.items() if any(k.startswith("gen_ai.") for s in spans
                                                     for k in s["attrs"])}
    assert result.report.counts.blank == len(oracle) - len(genai) == 1  # GET /health
    assert {c["id"] for c in result.cases} | {r["id"] for r in result.rejects} == genai
    [reject] = result.rejects  # the call answered only with a tool call, never run
    assert reject["error"] == ("The trace has no answer to take as `output`: no model call in "
                               "it answered with text (the last answered with tool calls).")
    validate_accepts(result.out)


def test_each_case_is_what_its_spans_say(tmp_path: Path, traces: Path) -> None:
    oracle = _spans(traces)
    statuses = []
    for case in convert(tmp_path, traces).cases:
        spans = oracle[case["id"]]
        last = _by_operation(spans, "chat")[-1]
        said = json.loads(last["attrs"]["gen_ai.input.messages"])
        answer = json.loads(last["attrs"]["gen_ai.output.messages"])
        assert case["output"] == answer[0]["parts"][0]["content"]
        users = [m["parts"][0]["content"] for m in said if m["role"] == "user"]
        assert case["input"] == users[-1]
        # The transcript: every input message, then the answer.
        assert [m["role"] for m in case["messages"]] == [m["role"] for m in said] + ["assistant"]
        tools = {s["attrs"]["gen_ai.tool.call.id"]: s for s in _by_operation(spans, "execute_tool")}
        for event in case.get("toolEvents", []):
            span = tools[event["id"]]
            failed = span.get("status", {}).get("code") == 2
            assert event["status"] == ("failure" if failed else "success")
            statuses.append(event["status"])
            if failed:
                assert event["error"] == span["status"]["message"] == "no such city"
        otel = case["metadata"]["otel"]
        assert otel["attributes"] == {k: v for k, v in last["attrs"].items()
                                      if k not in ("gen_ai.input.messages", "gen_ai.output.messages")}
        assert otel["span_id"] == last["spanId"] and otel["spans"] == len(spans)
        assert otel["resource"]["service.name"] == "weather-app"
    assert sorted(statuses) == ["failure", "success"]  # the tool that worked, and Atlantis


def test_golden(tmp_path: Path, traces: Path) -> None:
    result = convert(tmp_path, traces)
    data = result.out.read_bytes() + b"--- rejects\n" + \
        (tmp_path / "cases.rejects.jsonl").read_bytes()
    # Ids the SDK draws at random each run, in order of first sight.
    names: dict[bytes, bytes] = {}
    data = re.sub(rb"\b[0-9a-f]{32}\b|\b[0-9a-f]{16}\b|[0-9a-f]{8}-[0-9a-f-]{27}",
                  lambda m: names.setdefault(m[0], b"ID%d" % len(names)), data)
    data = re.sub(rb'"raw":"(?:[^"\\]|\\.)*"', b'"raw":"..."', data)
    golden("otel.golden.txt", data, GOLDEN)


def test_id_from_names_a_trace_by_its_attributes(tmp_path: Path, traces: Path) -> None:
    result = convert(tmp_path, traces, id_from="chat.{gen_ai.conversation.id}")
    assert [c["id"] for c in result.cases] == ["chat.conv-weather", "chat.conv-atlantis"]
    # The plain calls have no agent span, so no conversation id: said, never guessed.
    assert [r["error"] for r in result.rejects] == [
        "Column 'gen_ai.conversation.id' (in --id-from) holds null; an id is made of text and "
        "integers."] * 2


def test_commands_that_read_cases_say_how_traces_come_in(traces: Path) -> None:
    with pytest.raises(WrongFileError) as info:
        check_cases_input(str(traces))
    assert "looks like OpenTelemetry traces (OTLP JSON), not a cases file" in str(info.value)
    assert f"`evalstream convert {traces} cases.jsonl --from otel`" in str(info.value)


# -- real files, rearranged as other exporters and collectors write them --------------------------
def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _one_span_a_line(path: Path) -> list[dict[str, Any]]:
    """Each span in a request of its own (a collector with a batch of one)."""
    out = []
    for request in _lines(path):
        for group in request["resourceSpans"]:
            for scoped in group["scopeSpans"]:
                for span in scoped["spans"]:
                    out.append({"resourceSpans": [{**group, "scopeSpans": [
                        {**scoped, "spans": [span]}]}]})
    return out


def _write(tmp_path: Path, name: str, requests: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in requests))
    return path


def _cases(tmp_path: Path, path: Path) -> Any:
    sub = tmp_path / path.stem
    sub.mkdir()
    return convert(sub, path)


def test_any_order_of_lines_gives_the_same_cases(tmp_path: Path, traces: Path) -> None:
    whole = _cases(tmp_path, traces)
    spans = _one_span_a_line(traces)
    ordered = _cases(tmp_path, _write(tmp_path, "ordered.jsonl", spans))
    assert sorted(ordered.out.read_text().splitlines()) == sorted(whole.out.read_text().splitlines())
    # Roots first: a trace ends at its root, so its later spans are said, never merged.
    roots_first = sorted(spans, key=lambda r: bool(r["resourceSpans"][0]["scopeSpans"][0]
                                                   ["spans"][0].get("parentSpanId")))
    early = _cases(tmp_path, _write(tmp_path, "roots-first.jsonl", roots_first))
    late = [r for r in early.rejects if "came after its root span" in r["error"]]
    assert late and all(r["id"] in {c["id"] for c in whole.cases} | {x["id"] for x in whole.rejects}
                        for r in late)
    c = early.report.counts
    assert c.rows == c.cases + c.rejected + c.blank


def test_a_trace_whose_root_is_not_in_the_file(tmp_path: Path, traces: Path) -> None:
    spans = [r for r in _one_span_a_line(traces)
             if r["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"] != "invoke_agent weather-agent"]
    result = _cases(tmp_path, _write(tmp_path, "rootless.jsonl", spans))
    assert len(result.cases) == 3  # read at the end of the file
    assert all("root" not in c["metadata"]["otel"] for c in result.cases)


def test_content_on_the_operation_details_event(tmp_path: Path, traces: Path) -> None:
    # The conventions' other place for messages: an event on the span.
    requests = _lines(traces)
    for request in requests:
        for group in request["resourceSpans"]:
            for scoped in group["scopeSpans"]:
                for span in scoped["spans"]:
                    keep, moved = [], []
                    for a in span.get("attributes", []):
                        (moved if a["key"].endswith(".messages") else keep).append(a)
                    span["attributes"] = keep
                    if moved:
                        span["events"] = [{"name": "gen_ai.client.inference.operation.details",
                                           "timeUnixNano": span["endTimeUnixNano"],
                                           "attributes": moved}]
    moved_file = _write(tmp_path, "events.jsonl", requests)
    assert _cases(tmp_path, moved_file).out.read_text() == _cases(tmp_path, traces).out.read_text()


def test_content_not_recorded_says_how_to_record_it(tmp_path: Path, traces: Path) -> None:
    requests = _lines(traces)
    for request in requests:
        for group in request["resourceSpans"]:
            for scoped in group["scopeSpans"]:
                for span in scoped["spans"]:
                    span["attributes"] = [a for a in span.get("attributes", [])
                                          if not a["key"].endswith(".messages")]
    result = _cases(tmp_path, _write(tmp_path, "no-content.jsonl", requests))
    assert not result.cases and len(result.rejects) == 4
    assert all("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY" in r["error"]
               for r in result.rejects)


def test_lines_that_are_not_traces(tmp_path: Path, traces: Path) -> None:
    logs = {"resourceLogs": [{"resource": {}, "scopeLogs": []}]}
    path = tmp_path / "mixed.jsonl"
    path.write_text(traces.read_text() + json.dumps(logs) + "\n\n{not json\n")
    result = _cases(tmp_path, path)
    kinds = sorted(r["error"][:40] for r in result.rejects)
    assert kinds[0].startswith("The line is not an OTLP traces export (i")
    c = result.report.counts
    assert c.rows == c.cases + c.rejected + c.blank and c.blank == 2 and c.rejected == 3
    run(Options(input=str(path), output=str(tmp_path / "again.jsonl"), format="otel"))


def test_stdin_gives_the_files_cases(tmp_path: Path, traces: Path) -> None:
    out = tmp_path / "cases.jsonl"
    report, _ = run(Options(input=str(traces), output=str(out)))
    done = subprocess.run([sys.executable, "-m", "evalstream", "convert", "-", "-", "--from",
                           "otel", "-q"], input=traces.read_bytes(), capture_output=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == report.exit_code and done.stdout == out.read_bytes(), done.stderr
    assert done.stdout.count(b"\n") == 3
