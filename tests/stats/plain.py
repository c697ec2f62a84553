"""A plain, independent computation of the stats figures, for the tests to check against.

It reads the dataset with the standard ``json`` module (no msgspec, no Polars, no
evalstream code), applies the built-in rubrics' rules as written in the README, counts
tokens with tiktoken itself (``tests.helpers.oracle``), and computes medians and
percentiles with numpy. It handles valid datasets only.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from tests.helpers import ROOT, oracle_count

# The built-in rubrics (README, "Rubrics"): requires, when, and what a judge is shown.
BUILTIN = {
    "tool-backed-claims": {"requires": ["toolEvents"], "when": None,
                      "shows": ["input", "output", "messages", "toolEvents"]},
    "booking-succeeded": {"requires": ["toolEvents"], "when": ("scenario", ["booking"]),
                          "shows": None},  # exact: no judge state
    "claim-support": {"requires": ["context"], "when": None,
                      "shows": ["input", "output", "context"]},
    "policy-compliance": {"requires": ["policy"], "when": None,
                          "shows": ["input", "output", "messages", "policy", "toolEvents"]},
    "escalation": {"requires": ["policy"], "when": None,
                   "shows": ["input", "output", "messages", "policy"]},
    "task-success": {"requires": [], "when": None,
                     "shows": ["input", "output", "messages", "policy", "toolEvents"]},
    "booking-claim": {"requires": ["toolEvents"], "when": None,
                      "shows": ["input", "output", "messages", "toolEvents"]},
    "faithfulness": {"requires": ["context"], "when": None,
                     "shows": ["input", "output", "context"]},
    "instruction-following": {"requires": [], "when": None,
                              "shows": ["input", "output", "messages"]},
}
STATE_NAME = {"input": "user_input", "output": "assistant_response", "messages": "conversation",
              "context": "reference_material", "policy": "policy", "toolEvents": "tool_events"}
ORDER = ["input", "output", "messages", "context", "policy", "toolEvents"]


def cases(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def has(case: dict[str, Any], field: str) -> bool:
    return case.get(field) is not None


def applies(case: dict[str, Any], rubric: str) -> bool:
    rule = BUILTIN[rubric]
    if not all(has(case, f) for f in rule["requires"]):
        return False
    if rule["when"] is not None:
        key, allowed = rule["when"]
        return (case.get("metadata") or {}).get(key, object()) in allowed
    return True


def _item(kind: str, item: dict[str, Any]) -> dict[str, Any]:
    # The state holds decoded items re-encoded: fields in schema order, absent optional ones left out.
    fields = {"messages": ["id", "role", "content"], "context": ["id", "text"],
              "toolEvents": ["id", "name", "status", "input", "output", "error"]}[kind]
    return {f: item[f] for f in fields if item.get(f) is not None}


def state_bytes(case: dict[str, Any], rubric: str) -> int:
    """The UTF-8 size of the judge state's compact JSON (what build counts when it fits)."""
    return len(state_text(case, rubric).encode())


def state_text(case: dict[str, Any], rubric: str) -> str:
    """The judge state's compact JSON text: the fields the rubric shows, in the fixed order."""
    state = {}
    for field in ORDER:
        if field in BUILTIN[rubric]["shows"] and has(case, field):
            value = case[field]
            if isinstance(value, list):
                value = [_item(field, item) for item in value]
            state[STATE_NAME[field]] = value
    return json.dumps(state, ensure_ascii=False, separators=(",", ":"))


def questions() -> dict[str, str]:
    """Each judge rubric's system text as a judge receives it: the README's preamble first,
    the question, then the answer instruction (without `na` where the rubric says
    `allows_na = false`)."""
    import tomllib

    from evalstream._checks.state import ANSWER_INSTRUCTION, ANSWER_INSTRUCTION_NO_NA, PREAMBLE

    path = ROOT / "evalstream" / "_checks" / "builtin_rubrics.toml"
    return {r["id"]: f"{PREAMBLE}\n\n{r['question']}\n\n"
                     f"{ANSWER_INSTRUCTION if r.get('allows_na', True) else ANSWER_INSTRUCTION_NO_NA}"
            for r in tomllib.loads(path.read_text())["rubric"] if "question" in r}


# What every judge request holds beside its texts, in o200k_base tokens: OpenAI's chat
# overhead (3 a message and its role, 3 priming the reply) and the answer's schema.
def framing(tokenizer: str = "o200k_base") -> int:
    from evalstream._checks.state import ANSWER_SCHEMA

    schema = json.dumps(ANSWER_SCHEMA, separators=(",", ":"))
    return (3 + oracle_count("system", tokenizer) + 3 + oracle_count("user", tokenizer) + 3
            + oracle_count(schema, tokenizer))


def summary(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"mean": None, "median": None, "p95": None, "max": None}
    return {"mean": round(float(np.mean(values)), 2),
            "median": round(float(np.median(values)), 2),
            "p95": round(float(np.percentile(values, 95)), 2), "max": int(max(values))}


def group_figures(rows: list[dict[str, Any]], lines: list[bytes]) -> dict[str, Any]:
    """The group figures of the stats JSON, for the cases in ``rows``."""
    events = [e for c in rows for e in (c.get("toolEvents") or [])]
    failures = sum(1 for e in events if e["status"] == "failure")
    judges = [r for r in BUILTIN if BUILTIN[r]["shows"]]
    largest = [max(oracle_count(state_text(c, r)) for r in judges if applies(c, r))
               for c in rows if any(applies(c, r) for r in judges)]
    asked = questions()
    judge_tokens = sum(oracle_count(state_text(c, r)) + oracle_count(asked[r]) + framing()
                       for c in rows for r in judges if applies(c, r))
    return {
        "cases": len(rows),
        "fields": {f: sum(1 for c in rows if has(c, k)) for f, k in (
            ("messages", "messages"), ("context", "context"), ("policy", "policy"),
            ("tool_events", "toolEvents"), ("metadata", "metadata"), ("expected", "expected"))},
        "tool_events": len(events), "tool_failures": failures,
        "tool_failure_rate": round(failures / len(events), 4) if events else None,
        "messages": summary([len(c.get("messages") or []) for c in rows]),
        "input_chars": summary([len(c["input"]) for c in rows]),
        "output_chars": summary([len(c["output"]) for c in rows]),
        "line_bytes": summary([len(b) for b in lines]),
        "state_tokens": summary(largest),
        "judge_tokens": judge_tokens,
        "checks": sum(1 for c in rows for r in BUILTIN if applies(c, r)),
        "over_budget": 0,
    }


def by_scenario(path: Path) -> dict[str, Any]:
    """Per scenario (and "(all)"): the figures above."""
    raw = [line for line in path.read_bytes().split(b"\n") if line.strip()]
    rows = [json.loads(line) for line in raw]
    groups: defaultdict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(rows):
        groups[(c.get("metadata") or {}).get("scenario", "(missing)")].append(i)
    out = {g: group_figures([rows[i] for i in idx], [raw[i] for i in idx])
           for g, idx in groups.items()}
    out["(all)"] = group_figures(rows, raw)
    return out


def labels(path: Path) -> dict[str, Any]:
    """Per rubric: labels by status, by source and status, applies, labelled, stray labels."""
    rows = cases(path)
    out: dict[str, Any] = {}
    for rubric in BUILTIN:
        status: Counter[str] = Counter()
        source: Counter[tuple[str, str]] = Counter()
        labelled = stray = 0
        for c in rows:
            label = (c.get("expected") or {}).get(rubric)
            if label is None:
                continue
            status[label["status"]] += 1
            source[label["source"], label["status"]] += 1
            if applies(c, rubric):
                labelled += 1
            else:
                stray += 1
        n_applies = sum(1 for c in rows if applies(c, rubric))
        out[rubric] = {"labels": sum(status.values()), "status": dict(status),
                       "source": dict(source), "applies": n_applies, "labelled": labelled,
                       "not_applicable": stray}
    return out


def metadata_keys(path: Path, depth: int = 3) -> dict[str, tuple[int, set[str]]]:
    """Key path -> (cases that have it, distinct non-object values as text)."""
    seen: Counter[str] = Counter()
    values: defaultdict[str, set[str]] = defaultdict(set)

    def walk(obj: dict[str, Any], prefix: str, level: int) -> None:
        for key, value in obj.items():
            path_ = prefix + key
            seen[path_] += 1
            if isinstance(value, dict) and level < depth:
                walk(value, path_ + ".", level + 1)
            else:
                values[path_].add(value if isinstance(value, str) else
                                  json.dumps(value, separators=(",", ":"), ensure_ascii=False))

    for c in cases(path):
        if c.get("metadata") is not None:
            walk(c["metadata"], "", 1)
    return {k: (n, values[k]) for k, n in seen.items()}
