"""Regenerate the sample panel (deterministic): ``python data/samples/generate_panel.py``.

``panel.jsonl`` plays a jury of three over the judge states of ``verdicts.jsonl`` (issue 26),
as ``judge --jury data/samples/jury.toml`` writes its verdicts: ``mini`` answers what
``verdicts.jsonl`` says; ``haiku`` agrees with the case's label but where listed below;
``qwen`` is asked three samples a state at temperature 0.7 and splits on the states listed.
Each verdict carries its votes and panel, and its status is their majority (with the quorum).
``verdicts.jsonl``'s exact verdicts and its two verdicts without a state are left out.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from evalstream._verdicts.rules import agreed, decide, tally  # noqa: E402

# (case, rubric) -> haiku's status where it does not follow the label
HAIKU = {("case-02", "tool-backed-claims"): "fail", ("case-04", "tool-backed-claims"): "pass",
         ("case-12", "claim-support"): "fail", ("case-21", "policy-compliance"): "fail",
         ("case-27", "policy-compliance"): "pass", ("case-30", "escalation"): "pass",
         ("case-09", "escalation"): "fail", ("case-14", "policy-compliance"): "fail"}
# (case, rubric) -> qwen's three samples where they are not all the label
QWEN = {("case-02", "tool-backed-claims"): ("pass", "pass", "fail"),
        ("case-03", "tool-backed-claims"): ("fail", "pass", "fail"),
        ("case-20", "tool-backed-claims"): ("fail", "fail", "pass"),
        ("case-21", "policy-compliance"): ("pass", "fail", "pass"),
        ("case-27", "policy-compliance"): ("fail", "fail", "fail"),
        ("case-26", "policy-compliance"): ("unscored", "pass", "unscored"),
        ("case-30", "escalation"): ("pass", "fail", "pass")}
JURORS = (("mini", "gpt-4.1-mini"), ("haiku", "claude-haiku-4-5"), ("qwen", "qwen2.5-7b"))
SAID = {"pass": "The rubric is met: {what}.", "fail": "The rubric is not met: {what}.",
        "na": "The rubric does not apply to this case."}


def vote(juror: str, model: str, sample: int, status: str, key: tuple[str, str]) -> dict:
    if status == "unscored":
        return {"judge": juror, "model": model, "sample": sample, "status": "unscored",
                "rationale": None, "usage": None, "request_id": None,
                "error": {"cause": "timeout",
                          "detail": "no complete answer within 120 s (after 5 attempts)"}}
    text = SAID[status].format(what=f"{juror} on {key[0]}, {key[1]}")
    return {"judge": juror, "model": model, "sample": sample, "status": status,
            "rationale": text,
            "usage": {"input_tokens": 700 + 3 * len(key[0]), "output_tokens": 20 + len(text) // 4},
            "request_id": f"req_{juror}_{key[0]}_{key[1]}_{sample}"}


def main() -> None:
    labels = {}
    for line in (HERE / "cases.jsonl").read_text().splitlines():
        case = json.loads(line)
        for rubric, label in (case.get("expected") or {}).items():
            labels[(case["id"], rubric)] = label["status"]
    out = []
    for line in (HERE / "verdicts.jsonl").read_text().splitlines():
        v = json.loads(line)
        key = (v["case_id"], v["rubric_id"])
        if v.get("kind") == "exact" or "state_hash" not in v:
            continue
        label = labels.get(key, v["status"] if v["status"] != "unscored" else "pass")
        votes = [vote("mini", JURORS[0][1], 0, v["status"], key),
                 vote("haiku", JURORS[1][1], 0, HAIKU.get(key, label), key)]
        votes += [vote("qwen", JURORS[2][1], s, status, key)
                  for s, status in enumerate(QWEN.get(key, (label,) * 3))]
        t = tally(x["status"] for x in votes)
        decision = decide("majority", t)
        rationale = next((x["rationale"] for x in votes if x["status"] == decision.status),
                         None)
        usage = [x["usage"] for x in votes if x["usage"]]
        verdict = {"case_id": key[0], "rubric_id": key[1], "status": decision.status,
                   "rationale": rationale,
                   "judge": {"model": "small-panel", "provider": "jury", "base_url": "",
                             "temperature": None, "config_hash": "0" * 32},
                   "usage": {"input_tokens": sum(u["input_tokens"] for u in usage),
                             "output_tokens": sum(u["output_tokens"] for u in usage)},
                   "request_id": None, "rubric_hash": v["rubric_hash"],
                   "state_hash": v["state_hash"], "exposure": v["exposure"]}
        if decision.cause is not None:
            verdict["error"] = {"cause": decision.cause, "detail": decision.detail}
        verdict["votes"] = votes
        verdict["panel"] = {"rule": "majority", "votes": t.votes, "scored": t.scored,
                            "agreed": agreed(decision, t)}
        out.append(verdict)
    (HERE / "panel.jsonl").write_text("".join(
        json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in out))
    print(f"panel.jsonl: {len(out)} verdicts; "
          f"{dict(Counter(r['status'] for r in out))}")


if __name__ == "__main__":
    main()
