"""Regenerate the sample verdict files (deterministic):
``python data/samples/generate_verdicts.py``.

``verdicts.jsonl`` plays a judge over ``data/samples/cases.jsonl``: one verdict per judge
state that ``build`` writes for the sample (with its rubric_hash, state_hash and exposure),
agreeing with the case's label (``na`` too) except where listed below, plus build's own exact
verdicts,
a verdict for a check with no label and one for a case that is not in the file.
``verdicts-b.jsonl`` is a second run of the same judge with known differences from the first.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CASES = ROOT / "data" / "samples" / "cases.jsonl"

# (case, rubric) -> what the judge said instead of agreeing with the label.
DISAGREE = {
    ("case-02", "tool-backed-claims"): "pass",  # label fail: a miss
    ("case-04", "tool-backed-claims"): "pass",  # label fail: a miss
    ("case-20", "tool-backed-claims"): "fail",  # label pass: a false alarm
    ("case-12", "claim-support"): "pass",  # label fail: a miss
    ("case-21", "policy-compliance"): "pass",  # label fail: a miss
    ("case-27", "policy-compliance"): "fail",  # label pass: a false alarm
    ("case-30", "escalation"): "fail",  # label pass: a false alarm
}
UNSCORED = {("case-26", "policy-compliance"), ("case-11", "claim-support")}
NA = {("case-08", "policy-compliance")}  # label pass: the judge says the rubric does not apply
SKIPPED = {("case-39", "escalation"), ("case-43", "policy-compliance")}  # no verdict
JUDGE = {"model": "judge-small-2025", "temperature": 0}


def states() -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "states.jsonl"
        subprocess.run([sys.executable, "-m", "evalstream", "build", str(CASES), str(out), "-q"],
                       check=True, cwd=ROOT)
        return [json.loads(line) for line in out.read_text().splitlines()]


def main() -> None:
    labels = {}
    for line in CASES.read_text().splitlines():
        case = json.loads(line)
        for rubric, label in (case.get("expected") or {}).items():
            labels[(case["id"], rubric)] = label["status"]
    verdicts = []
    for record in states():
        key = (record["case_id"], record["rubric_id"])
        if record.get("kind") == "exact":
            verdicts.append(record)
            continue
        if key in SKIPPED:
            continue
        label = labels.get(key)
        status = DISAGREE.get(key) or label or "pass"
        if key in UNSCORED:
            status = "unscored"
        if key in NA:
            status = "na"
        verdicts.append({
            "case_id": key[0], "rubric_id": key[1], "status": status,
            "rationale": {"pass": "The response meets the rubric.",
                          "na": "The rubric does not apply to this case."}.get(
                              status, "The response misses the rubric."),
            "judge": JUDGE, "rubric_hash": record["rubric_hash"],
            "state_hash": record["state_hash"], "exposure": record["exposure"]})
    verdicts.append({"case_id": "case-99", "rubric_id": "claim-support", "status": "fail",
                     "judge": JUDGE})
    write(HERE / "verdicts.jsonl", verdicts)

    run_b = []
    for v in verdicts:
        key = (v["case_id"], v["rubric_id"])
        v = json.loads(json.dumps(v))
        if key == ("case-02", "tool-backed-claims"):
            v["status"] = "fail"  # fail after pass: fixed
        elif key in {("case-20", "tool-backed-claims"), ("case-27", "policy-compliance")}:
            v["status"] = "pass"
        elif key in {("case-01", "tool-backed-claims"), ("case-03", "tool-backed-claims"),
                     ("case-05", "policy-compliance")}:
            v["status"] = "fail" if v["status"] == "pass" else "pass"
        elif key == ("case-11", "claim-support"):
            v["status"] = "pass"  # unscored in A
        elif key == ("case-16", "claim-support"):
            v["status"] = "unscored"
        elif key == ("case-12", "claim-support"):
            v["state_hash"] = "0" * 32  # the judge saw another state
            v["status"] = "fail"
        elif key == ("case-22", "escalation"):
            v["rubric_hash"] = "f" * 32  # the rubric was edited
            v["status"] = "fail"
        elif key == ("case-25", "escalation"):
            v["exposure"]["shown"] = v["exposure"]["shown"] + ["tool_events"]
        elif key == ("case-23", "policy-compliance"):
            continue  # only in A
        run_b.append(v)
    run_b.append({"case_id": "case-44", "rubric_id": "escalation", "status": "pass",
                  "judge": JUDGE})  # only in B
    write(HERE / "verdicts-b.jsonl", run_b)


def write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n"
                            for r in records))


if __name__ == "__main__":
    main()
