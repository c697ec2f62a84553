"""A simulated judge with a known bias on the shared corpus's HaluEval human labels (issue 29):
``python data/samples/simulate_judge.py CORPUS/halueval.jsonl OUT [--labels 300] [--seed 29]``.

Deterministic (one seeded ``random.Random``). Of HaluEval's general part (4,507 ChatGPT
answers, each with a human hallucination label: ``claim-support`` pass or fail), it writes:

- ``OUT/verdicts.jsonl``: a lenient judge's verdict on every case: it passes 97% of the
  answers people passed and 55% of those they failed (so its raw pass rate is too high), with
  a ``confidence`` (``source: logprobs``) that is higher where it is right (0.70 to 1.00) than
  where it is wrong (0.50 to 0.85), as a judge's token probabilities tend to be;
- ``OUT/cases.jsonl``: the same cases with the human label kept on ``--labels`` of them, drawn
  at random, and taken off the rest (as a team that labelled a sample would have them);
- ``OUT/truth.json``: the true pass rate over every case, for the comparison.

Then ``python -m evalstream agree OUT/verdicts.jsonl OUT/cases.jsonl --estimate`` sets the
judge's raw rate, the labelled rate and the corrected interval side by side (README).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

RUBRIC = "claim-support"
PASS_IF_PASS, PASS_IF_FAIL = 0.97, 0.55


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("halueval", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--labels", type=int, default=300)
    p.add_argument("--seed", type=int, default=29)
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    cases = [c for c in map(json.loads, args.halueval.read_text("utf-8").splitlines())
             if c["id"].startswith("halueval.general.")
             and c.get("expected", {}).get(RUBRIC, {}).get("source") == "human"]
    keep = set(rng.sample(range(len(cases)), args.labels))
    args.out.mkdir(parents=True, exist_ok=True)
    truth = 0
    with open(args.out / "verdicts.jsonl", "w") as verdicts, \
            open(args.out / "cases.jsonl", "w") as labelled:
        for i, case in enumerate(cases):
            label = case["expected"][RUBRIC]["status"]
            truth += label == "pass"
            says = "pass" if rng.random() < (PASS_IF_PASS if label == "pass"
                                             else PASS_IF_FAIL) else "fail"
            sure = rng.uniform(0.70, 1.0) if says == label else rng.uniform(0.50, 0.85)
            other = "fail" if says == "pass" else "pass"
            confidence = {says: round(sure, 4), other: round((1 - sure) * 0.9, 4)}
            confidence["na"] = round(1 - confidence[says] - confidence[other], 4)
            verdicts.write(json.dumps({
                "case_id": case["id"], "rubric_id": RUBRIC, "status": says,
                "rationale": "simulated",
                "confidence": {s: confidence[s] for s in ("pass", "fail", "na")}
                | {"source": "logprobs"}}) + "\n")
            if i not in keep:
                del case["expected"]
            labelled.write(json.dumps(case, ensure_ascii=False) + "\n")
    (args.out / "truth.json").write_text(json.dumps(
        {"cases": len(cases), "true_pass_rate": truth / len(cases)}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
