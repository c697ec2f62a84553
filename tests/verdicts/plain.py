"""Plain-Python references for agree and compare: dictionaries and loops over the raw JSON
lines, sharing no code with the Polars path they check."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

SCORED = ("pass", "fail")


@dataclass
class PlainCell:
    confusion: Counter[tuple[str, str]] = field(default_factory=Counter)  # (label, verdict)
    unscored: int = 0
    na_verdicts: int = 0
    labels_without_verdict: int = 0
    na_labels: int = 0
    na_with_verdict: int = 0
    verdicts_without_label: int = 0
    unknown_case: int = 0


@dataclass
class PlainRubric:
    all: PlainCell = field(default_factory=PlainCell)
    by_source: dict[str, PlainCell] = field(default_factory=lambda: defaultdict(PlainCell))
    by_group: dict[str | None, PlainCell] = field(default_factory=lambda: defaultdict(PlainCell))
    missed: list[str] = field(default_factory=list)  # in verdict-line order
    false_alarms: list[str] = field(default_factory=list)
    unscored: list[str] = field(default_factory=list)
    labels_without_verdict: list[str] = field(default_factory=list)  # in case-line order
    verdicts_without_label: list[str] = field(default_factory=list)


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def group_of(metadata: dict[str, Any] | None, by: str) -> str | None:
    value: Any = metadata
    for key in by.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def plain_agree(verdicts_text: str, cases_text: str, by: str | None = None,
                ) -> dict[str, PlainRubric]:
    """Per rubric, every key's bucket, from valid lines only (all lines must be valid)."""
    labels: dict[tuple[str, str], tuple[str, str]] = {}
    label_order: list[tuple[str, str]] = []
    groups: dict[str, str | None] = {}
    for case in _lines(cases_text):
        groups[case["id"]] = group_of(case.get("metadata"), by) if by else None
        for rubric, label in (case.get("expected") or {}).items():
            labels[(case["id"], rubric)] = (label["status"], label["source"])
            label_order.append((case["id"], rubric))
    verdicts: dict[tuple[str, str], str] = {}
    for v in _lines(verdicts_text):
        if "status" in v:
            verdicts[(v["case_id"], v["rubric_id"])] = v["status"]
    out: dict[str, PlainRubric] = defaultdict(PlainRubric)
    for key, status in verdicts.items():  # dicts keep insertion (line) order
        case, rubric = key
        r = out[rubric]
        cells = [r.all] + ([r.by_group[groups.get(case)]] if by else [])
        if key not in labels:
            for cell in cells:
                cell.verdicts_without_label += 1
                cell.unknown_case += case not in groups
            r.verdicts_without_label.append(case)
            continue
        label, source = labels[key]
        cells.append(r.by_source[source])
        for cell in cells:
            if label == "na":
                cell.na_labels += 1
                cell.na_with_verdict += 1
            elif status == "unscored":
                cell.unscored += 1
            elif status == "na":
                cell.na_verdicts += 1
            else:
                cell.confusion[(label, status)] += 1
        if label in SCORED and status == "unscored":
            r.unscored.append(case)
        elif (label, status) == ("fail", "pass"):
            r.missed.append(case)
        elif (label, status) == ("pass", "fail"):
            r.false_alarms.append(case)
    for key in label_order:
        if key in verdicts:
            continue
        case, rubric = key
        label, source = labels[key]
        r = out[rubric]
        for cell in [r.all, r.by_source[source]] + ([r.by_group[groups[case]]] if by else []):
            if label == "na":
                cell.na_labels += 1
            else:
                cell.labels_without_verdict += 1
        if label != "na":
            r.labels_without_verdict.append(case)
    return dict(out)


@dataclass
class PlainComparison:
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    not_comparable: list[str] = field(default_factory=list)
    differs: Counter[str] = field(default_factory=Counter)
    transitions: Counter[tuple[str, str]] = field(default_factory=Counter)
    pass_to_fail: list[str] = field(default_factory=list)
    fail_to_pass: list[str] = field(default_factory=list)


def _shown(v: dict[str, Any]) -> frozenset[str] | None:
    exposure = v.get("exposure")
    return None if exposure is None else frozenset(exposure["shown"])


def plain_compare(a_text: str, b_text: str, force: bool = False) -> dict[str, PlainComparison]:
    """Per rubric, what a pair-by-pair comparison of two runs finds."""
    a = {(v["case_id"], v["rubric_id"]): v for v in _lines(a_text) if "status" in v}
    b = {(v["case_id"], v["rubric_id"]): v for v in _lines(b_text) if "status" in v}
    out: dict[str, PlainComparison] = defaultdict(PlainComparison)
    for key, va in a.items():
        r = out[key[1]]
        vb = b.get(key)
        if vb is None:
            r.only_a.append(key[0])
            continue
        reasons = [name for name, x, y in (
            ("rubric_hash", va.get("rubric_hash"), vb.get("rubric_hash")),
            ("state_hash", va.get("state_hash"), vb.get("state_hash")),
            ("exposure", _shown(va), _shown(vb))) if x != y]
        r.differs.update(reasons)
        if reasons:
            r.not_comparable.append(key[0])
            if not force:
                continue
        transition = (va["status"], vb["status"])
        r.transitions[transition] += 1
        if transition == ("pass", "fail"):
            r.pass_to_fail.append(key[0])
        elif transition == ("fail", "pass"):
            r.fail_to_pass.append(key[0])
    for key in b:
        if key not in a:
            out[key[1]].only_b.append(key[0])
    return dict(out)


# -- issue 29: the published formulas, transcribed with numpy arrays -------------------------------
def plain_ppi_mean(y: Any, f: Any, f_unlabelled: Any, confidence: float = 0.95,
                   ) -> tuple[float, float, float, float]:
    """PPI++ for a mean (Angelopoulos, Duchi, Zrnic 2023, as ``ppi_py.ppi_mean_ci`` and its
    ``_calc_lhat_glm`` with ``clip``): (estimate, low, high, lambda), from the arrays."""
    import numpy as np
    from scipy.stats import norm

    y, f, fu = (np.asarray(a, dtype=float) for a in (y, f, f_unlabelled))
    n, big_n = len(y), len(fu)
    # _calc_lhat_glm for a mean: gradients are the centred values, the Hessian the identity.
    cov = (1 / n) * 2 * np.sum((y - y.mean()) * (f - f.mean()))
    var_all = np.cov(np.concatenate([f, fu]))
    lam = float(np.clip(cov / (2 * (1 + n / big_n) * var_all), 0, 1))
    theta = lam * fu.mean() + (y - lam * f).mean()
    se = np.sqrt((lam * fu).std() ** 2 / big_n + (y - lam * f).std() ** 2 / n)
    z = norm.ppf(0.5 + confidence / 2)
    return float(theta), max(theta - z * se, 0.0), min(theta + z * se, 1.0), lam


def plain_ece(confidences: list[float], agreed: list[bool], bins: int = 10,
              ) -> tuple[float, list[tuple[int, float, float]]]:
    """The expected calibration error and the (pairs, mean confidence, agreement) of each
    non-empty bin, with numpy's digitize over equal bins (the last closed)."""
    import numpy as np

    c, a = np.asarray(confidences), np.asarray(agreed, dtype=float)
    which = np.clip(np.digitize(c, np.linspace(0, 1, bins + 1)[1:-1]), 0, bins - 1)
    table, ece = [], 0.0
    for b in range(bins):
        inside = which == b
        if inside.any():
            table.append((int(inside.sum()), float(c[inside].mean()), float(a[inside].mean())))
            ece += inside.mean() * abs(a[inside].mean() - c[inside].mean())
    return float(ece), table
