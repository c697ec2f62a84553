"""The cost of judge tokens (``_verdicts.cost``): one formula, written once, for every figure in
USD (judge's report and --max-cost, --dry-run, batch collect, agree over several runs)."""

from __future__ import annotations

import ast
import random

from evalstream._verdicts.cost import Price, price, usd
from tests.helpers import ROOT

MILLION = {1e6, 10**6}  # 1_000_000 == 1e6: one entry


def test_usd_is_tokens_times_price_per_million() -> None:
    assert usd(1_000_000, 0, 0.4, 1.6) == 0.4
    assert usd(0, 1_000_000, 0.4, 1.6) == 1.6
    assert usd(250_000, 500_000, 2.0, 8.0) == 4.5
    assert usd(0, 0, 3.0, 15.0) == 0.0


def test_usd_gives_the_bytes_the_figures_always_had() -> None:
    """The figures in reports and goldens do not move: the same float as the expression the
    four callers wrote inline before (left to right, one division at the end)."""
    rng = random.Random(31)
    for _ in range(10_000):
        i, o = rng.randrange(10**9), rng.randrange(10**8)
        p_in, p_out = rng.choice([0.1, 0.4, 2.5, 1e5]) * rng.random(), rng.random() * 60
        assert usd(i, o, p_in, p_out) == (i * p_in + o * p_out) / 1e6
        assert repr(round(usd(i, o, p_in, p_out), 6)) == repr(round((i * p_in + o * p_out) / 1e6, 6))


def test_the_formula_is_written_once() -> None:
    """No module but ``_verdicts/cost.py`` turns tokens and prices per million into USD."""
    home = ROOT / "evalstream" / "_verdicts" / "cost.py"
    found = []
    for path in sorted((ROOT / "evalstream").rglob("*.py")):
        tree = ast.parse(path.read_text())
        found += [f"{path.relative_to(ROOT)}:{node.lineno}" for node in ast.walk(tree)
                  if path != home and isinstance(node, ast.BinOp)
                  and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant)
                  and node.right.value in MILLION]
    assert found == [], f"tokens x price per million is `_verdicts.cost.usd`'s; call it: {found}"


def test_the_price_record_is_written_once() -> None:
    """One struct holds a price (USD per million input and output tokens): judge's reports
    and agree over several runs show the same record, defined in ``_verdicts/cost.py``."""
    home = ROOT / "evalstream" / "_verdicts" / "cost.py"
    found = []
    for path in sorted((ROOT / "evalstream").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and [
                    (s.target.id, ast.unparse(s.annotation)) for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            ] == [("input", "float"), ("output", "float")]:
                found.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert found == [f"{home.relative_to(ROOT)}:Price"], f"a price is `_verdicts.cost.Price`: {found}"


def test_a_price_is_given_whole_or_not_at_all() -> None:
    assert price(0.4, 1.6) == Price(0.4, 1.6)
    assert price(0.0, 0.0) == Price(0.0, 0.0)  # free is a price
    assert price(0.4, None) is None and price(None, 1.6) is None and price(None, None) is None


def test_judge_takes_its_prices_from_one_rule() -> None:
    """judge, its dry run, a panel's jurors and batch collect make their price with
    ``cost.price``, not each with its own test of the two halves."""
    made = []
    for path in sorted((ROOT / "evalstream" / "_judge").rglob("*.py")):
        made += [f"{path.relative_to(ROOT)}:{node.lineno}"
                 for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.Call) and ast.unparse(node.func) in {"Price", "Prices"}]
    assert made == [], f"make a price with `_verdicts.cost.price`: {made}"
