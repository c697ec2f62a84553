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
# case-08 policy-compliance: the judge answered `na`, which that rubric does not allow.
UNSCORED = {("case-26", "policy-compliance"), ("case-11", "claim-support"),
            ("case-08", "policy-compliance")}
NA = {("case-08", "escalation")}  # label pass: the judge says the rubric does not apply
SKIPPED = {("case-39", "escalation"), ("case-43", "policy-compliance")}  # no verdict
JUDGE = {"model": "judge-small-2025", "temperature": 0}
# What the pretend judge says, by rubric and status; {quote} is the response's first sentence.
RATIONALE = {
    ("tool-backed-claims", "pass"): "Every action the response claims is backed by a successful "
                               "tool event.",
    ("tool-backed-claims", "fail"): "The response claims an action that no successful tool event "
                               "shows: \"{quote}\"",
    ("claim-support", "pass"): "Each factual claim is supported by the reference material.",
    ("claim-support", "fail"): "This claim is not in the reference material: \"{quote}\"",
    ("policy-compliance", "pass"): "The response follows the policy.",
    ("policy-compliance", "fail"): "The response goes against the policy: \"{quote}\"",
    ("escalation", "pass"): "Escalation is handled as the policy asks.",
    ("escalation", "fail"): "The policy asks for a hand-off the response does not make: "
                            "\"{quote}\"",
}
# The pretend judge ran the rubrics above; the starter rubrics that issue 30 added to the
# built-in set (task-success, booking-claim, faithfulness, instruction-following) it did not
# run, so their states stay unjudged, as after a run with --rubrics naming the first five.
JUDGED = {rubric for rubric, _ in RATIONALE}
NA_RATIONALE = "The rubric does not apply to this case."
# Why the judge gave no usable answer (causes and details as `evalstream judge` writes them).
ERRORS = {
    ("case-26", "policy-compliance"): {
        "cause": "not_json", "detail": "the answer is not JSON: 'Looking at the policy, the "
                                       "assistant mostly complied, although...'"},
    ("case-11", "claim-support"): {
        "cause": "timeout", "detail": "no complete answer within 120 s (after 5 attempts)"},
    ("case-08", "policy-compliance"): {
        "cause": "na_not_allowed", "detail": "the judge answered na, which this rubric does not "
                                             "allow (allows_na = false): The rubric does not "
                                             "apply to this case."},
    ("case-16", "claim-support"): {
        "cause": "truncated", "detail": "the answer was cut at --max-output-tokens (1024): "
                                        "'{\"status\": \"pass\", \"reason\": \"Every claim'"},
}


def judged(verdict: dict, status: str, output: str) -> None:
    """Set a verdict's status and what goes with it: the rationale and usage of an answer,
    or the error of an unscored one."""
    key = (verdict["case_id"], verdict["rubric_id"])
    verdict["status"] = status
    verdict.pop("error", None)
    if status == "unscored":
        verdict["rationale"], verdict["usage"] = None, None
        verdict["error"] = ERRORS[key]
        return
    quote = output.split(". ")[0][:90]
    text = NA_RATIONALE if status == "na" else RATIONALE[(key[1], status)].format(quote=quote)
    verdict["rationale"] = text
    verdict["usage"] = {"input_tokens": 650 + len(output) // 4 + 7 * len(key[0]),
                        "output_tokens": 18 + len(text) // 4}


def states() -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "states.jsonl"
        subprocess.run([sys.executable, "-m", "evalstream", "build", str(CASES), str(out), "-q"],
                       check=True, cwd=ROOT)
        return [json.loads(line) for line in out.read_text().splitlines()]


def main() -> None:
    labels = {}
    outputs = {}
    for line in CASES.read_text().splitlines():
        case = json.loads(line)
        outputs[case["id"]] = case["output"]
        for rubric, label in (case.get("expected") or {}).items():
            labels[(case["id"], rubric)] = label["status"]
    verdicts = []
    for record in states():
        key = (record["case_id"], record["rubric_id"])
        if record.get("kind") == "exact":
            verdicts.append(record)
            continue
        if key in SKIPPED or key[1] not in JUDGED:
            continue
        label = labels.get(key)
        status = DISAGREE.get(key) or label or "pass"
        if key in UNSCORED:
            status = "unscored"
        if key in NA:
            status = "na"
        verdict = {"case_id": key[0], "rubric_id": key[1], "status": status, "rationale": None,
                   "judge": JUDGE, "usage": None, "rubric_hash": record["rubric_hash"],
                   "state_hash": record["state_hash"], "exposure": record["exposure"]}
        judged(verdict, status, outputs[key[0]])
        verdicts.append(verdict)
    verdicts.append({"case_id": "case-99", "rubric_id": "claim-support", "status": "fail",
                     "judge": JUDGE})
    write(HERE / "verdicts.jsonl", verdicts)

    run_b = []
    for v in verdicts:
        key = (v["case_id"], v["rubric_id"])
        v = json.loads(json.dumps(v))
        output = outputs.get(key[0], "")
        if key == ("case-02", "tool-backed-claims"):
            judged(v, "fail", output)  # fail after pass: fixed
        elif key in {("case-20", "tool-backed-claims"), ("case-27", "policy-compliance")}:
            judged(v, "pass", output)
        elif key in {("case-01", "tool-backed-claims"), ("case-03", "tool-backed-claims"),
                     ("case-05", "policy-compliance")}:
            judged(v, "fail" if v["status"] == "pass" else "pass", output)
        elif key == ("case-11", "claim-support"):
            judged(v, "pass", output)  # unscored in A
        elif key == ("case-16", "claim-support"):
            judged(v, "unscored", output)
        elif key == ("case-12", "claim-support"):
            v["state_hash"] = "0" * 32  # the judge saw another state
            judged(v, "fail", output)
        elif key == ("case-22", "escalation"):
            v["rubric_hash"] = "f" * 32  # the rubric was edited
            judged(v, "fail", output)
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
