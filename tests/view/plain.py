"""An independent reading of view's inputs with the standard library's json and plain
dicts: what each list must hold, computed without evalstream."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATUSES = ("pass", "fail", "unscored", "na")
TRANSITIONS_FIRST = ("pass->fail", "fail->pass")


def lines_of(path: Path) -> list[tuple[int, Any]]:
    """(line number, JSON value or None) of every line that is not blank."""
    out = []
    for n, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            out.append((n, json.loads(raw)))
        except ValueError:
            out.append((n, None))
    return out


def count_lines(path: Path) -> tuple[int, int]:
    """(lines, blank lines) as the read loop counts them: a final newline ends the last line."""
    data = path.read_bytes()
    parts = data.split(b"\n")
    if data.endswith(b"\n"):
        parts.pop()
    return len(parts), sum(1 for p in parts if not p.strip())


def _is_case(obj: Any) -> bool:
    return isinstance(obj, dict) and all(isinstance(obj.get(k), str) for k in ("id", "input",
                                                                                 "output"))


def _is_record(obj: Any) -> bool:
    return (isinstance(obj, dict) and isinstance(obj.get("case_id"), str)
            and isinstance(obj.get("rubric_id"), str)
            and (obj.get("status") in STATUSES or "state" in obj))


@dataclass
class Plain:
    cases: dict[str, dict[str, Any]] = field(default_factory=dict)  # first use of each id
    labels: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    verdicts: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    pending: list[tuple[str, str]] = field(default_factory=list)  # judge-state lines
    other: list[tuple[int, dict[str, Any]]] = field(default_factory=list)


def read(cases: Path, verdicts: Path, other: Path | None = None) -> Plain:
    p = Plain()
    for _, obj in lines_of(cases):
        if _is_case(obj) and obj["id"] not in p.cases:
            p.cases[obj["id"]] = obj
            for rubric, label in (obj.get("expected") or {}).items():
                p.labels[(obj["id"], rubric)] = (label["status"], label["source"])
    for n, obj in lines_of(verdicts):
        if _is_record(obj):
            if obj.get("status") is None:
                p.pending.append((obj["case_id"], obj["rubric_id"]))
            else:
                p.verdicts.append((n, obj))
    if other is not None:
        p.other = [(n, obj) for n, obj in lines_of(other)
                   if _is_record(obj) and obj.get("status") is not None]
    return p


def key(v: dict[str, Any]) -> tuple[str, str]:
    return v["case_id"], v["rubric_id"]


def disagreements(p: Plain) -> list[tuple[str, str, str]]:
    """(case, rubric, direction): missed first, then false alarms, then na verdicts on a
    pass/fail label (issue 25), each in line order."""
    found = []
    for n, v in p.verdicts:
        label = p.labels.get(key(v))
        if not label or label[0] not in ("pass", "fail"):
            continue
        if v["status"] in ("pass", "fail") and label[0] != v["status"]:
            missed = label[0] == "fail"
            found.append((0 if missed else 1, n, (*key(v), "missed" if missed else "false alarm")))
        elif v["status"] == "na":
            found.append((2, n, (*key(v), "na verdict")))
    return [entry for _, _, entry in sorted(found)]


def unscored(p: Plain) -> list[tuple[str, str, str]]:
    return [(*key(v), (v.get("error") or {}).get("cause", "(no cause given)"))
            for _, v in p.verdicts if v["status"] == "unscored"]


def everything(p: Plain) -> list[tuple[str, str, str]]:
    return [(*key(v), v["status"]) for _, v in p.verdicts]


def _seen(v: dict[str, Any]) -> tuple[Any, Any, Any]:
    exposure = v.get("exposure")
    shown = None if exposure is None else tuple(sorted(exposure["shown"]))
    return v.get("rubric_hash"), v.get("state_hash"), shown


def flips(p: Plain) -> list[tuple[str, str, str]]:
    """(case, rubric, change) in view's order: pass->fail, fail->pass, other changes by name,
    not comparable, only in this run, only in the other run; each in line order."""
    others = {key(v): v for _, v in p.other}
    mine = {key(v) for _, v in p.verdicts}
    rest = sorted(f"{a}->{b}" for a in STATUSES for b in STATUSES
                  if a != b and f"{a}->{b}" not in TRANSITIONS_FIRST)
    order = [*TRANSITIONS_FIRST, *rest, "not comparable", "only in this run",
             "only in the other run"]
    found = []
    for n, v in p.verdicts:
        o = others.get(key(v))
        if o is None:
            kind = "only in this run"
        elif _seen(v) != _seen(o):
            kind = "not comparable"
        elif v["status"] != o["status"]:
            kind = f"{v['status']}->{o['status']}"
        else:
            continue
        found.append((order.index(kind), n, (*key(v), kind)))
    for n, o in p.other:
        if key(o) not in mine:
            found.append((order.index("only in the other run"), n, (*key(o),
                                                                     "only in the other run")))
    return [entry for _, _, entry in sorted(found)]


def skipped_extra(p: Plain) -> set[tuple[str, str, str]]:
    """The entries of the skipped list that do not come from build's rules: judge states
    without a verdict, and labels whose check has no verdict and is not skipped otherwise
    (the caller removes the keys build skips)."""
    judged = {key(v) for _, v in p.verdicts}
    out = {(c, r, "not judged") for c, r in p.pending if (c, r) not in judged}
    out |= {(c, r, "labelled, no verdict") for (c, r) in p.labels
            if (c, r) not in judged and (c, r, "not judged") not in out}
    return out
