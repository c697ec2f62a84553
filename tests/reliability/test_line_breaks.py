"""U+2028, U+2029 and U+0085 in data: every JSONL evalstream writes keeps one record per line
for readers that split lines on them too (JavaScript, Python's ``str.splitlines``), and every
record still reads back as the same JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream._files.outputs import escape_line_breaks

from .support import cli

BREAKS = "\u2028\u2029\u0085"
LABEL = {"status": "pass", "source": "human"}


def _splits_alike(data: bytes) -> list[str]:
    """The lines of ``data``; str.splitlines must find exactly the newline-split ones."""
    text = data.decode("utf-8")
    assert not any(c in text for c in BREAKS), "a raw line separator was written"
    by_newline = text.split("\n")
    if by_newline and by_newline[-1] == "":
        by_newline.pop()
    assert text.splitlines() == by_newline
    return by_newline


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("a\"\\\n" + BREAKS + "\u2027\u202a\u0084é"), max_size=12))
def test_escaped_json_reads_back_the_same(text: str) -> None:
    encoded = json.dumps({"k": text}, ensure_ascii=False).encode()
    escaped = escape_line_breaks(encoded)
    assert json.loads(escaped) == {"k": text}
    assert not any(c in escaped.decode() for c in BREAKS)
    if not any(c in text for c in BREAKS):
        assert escaped is encoded  # nothing to escape: the same bytes object, no copy


@pytest.mark.slow
def test_every_output_of_every_command_keeps_one_record_per_line(tmp_path: Path) -> None:
    b = BREAKS
    case = {"id": "c1", "input": f"in{b}put", "output": f"out{b}", "policy": f"p{b}",
            "messages": [{"id": f"m{b}", "role": "user", "content": f"hi{b}"}],
            "toolEvents": [{"id": f"t{b}1", "name": "book", "status": "success",
                            "input": {f"k{b}": [f"v{b}"]}, "output": f"done{b}"}],
            "metadata": {"scenario": f"s{b}", f"key{b}": 1}, "expected": {"r": LABEL}}
    bad = {"id": "c2", "input": f"x{b}", "output": 5}  # rejected: output is not a string
    (tmp_path / "c.jsonl").write_text(
        "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in (case, bad)))
    (tmp_path / "r.toml").write_text(
        f'[[rubric]]\nid = "r"\nquestion = "Is it fine?{b}"\nshows = ["user_input", '
        '"assistant_response", "conversation", "policy", "tool_events"]\n'
        '[[rubric]]\nid = "e"\nkind = "exact"\ncheck = { called = "book" }\n')
    (tmp_path / "v.jsonl").write_text(json.dumps(
        {"case_id": "c1", "rubric_id": "r", "status": "pass", "rationale": f"ok{b}"},
        ensure_ascii=False) + "\n" + json.dumps({"case_id": f"x{b}", "rubric_id": "r"},
                                                ensure_ascii=False) + "\n")
    runs = [["build", "c.jsonl", "s.jsonl", "--rubrics", "r.toml"],
            ["stats", "c.jsonl", "--rubrics", "r.toml", "--by", "scenario", "--format", "json",
             "-o", "stats.json", "--rejects", "stats.rejects.jsonl"],
            ["agree", "v.jsonl", "c.jsonl", "--by", "scenario", "--format", "json", "-o",
             "agree.json", "--rejects", "agree.rejects.jsonl"]]
    for args in runs:
        done = cli(*args, cwd=tmp_path)
        assert done.returncode == 1, done.stderr  # each run has its reject
    states = [json.loads(x) for x in _splits_alike((tmp_path / "s.jsonl").read_bytes())]
    assert len(states) == 2
    judge, exact = states
    assert judge["state"]["user_input"] == case["input"]
    assert judge["state"]["conversation"] == case["messages"]
    assert judge["state"]["tool_events"] == case["toolEvents"]
    assert judge["question"].endswith(f"Is it fine?{b}")
    assert exact["evidence"] == [f"t{b}1"]
    for name in ("s.rejects.jsonl", "stats.rejects.jsonl", "agree.rejects.jsonl"):
        rejects = [json.loads(x) for x in _splits_alike((tmp_path / name).read_bytes())]
        assert rejects and all(b in r["raw"] for r in rejects), name
    for name in ("s.report.json", "stats.json", "agree.json"):
        json.loads(b"".join(x.encode() for x in _splits_alike((tmp_path / name).read_bytes())))
