"""Coverage first on ``view``'s overview (issue 25): per rubric, over how many pass/fail labels
the run's verdicts can be compared, the accuracy over those scored and over all of them, and
what was left out (na verdicts, unscored, stale, no verdict), counted as ``agree`` counts
them (``_verdicts.coverage``); the warnings that lead the overview when coverage is bad or
verdicts are stale. Vectorised over the index's label keys."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from evalstream._render.coverage import sentence, share
from evalstream._verdicts.coverage import Coverage, coverage, worst_first
from evalstream._verdicts.records import FAIL, NA_VERDICT, PASS, UNSCORED
from evalstream._verdicts.stale import NOT_CHECKED, RUBRIC, STATE
from evalstream._view.index import LABEL_STATUSES, NONE, Index

if TYPE_CHECKING:
    import numpy as np

NUM = ' class="num"'


def by_rubric(ix: Index) -> list[tuple[str, Coverage, float | None]]:
    """(rubric id, coverage, accuracy over the scored pairs) of every rubric with a pass or
    fail label, in rubric code order."""
    import numpy as np

    label = ix.label_status
    labelled = label != LABEL_STATUSES.index("na")
    keys = ix.label_key[labelled]
    wanted = label[labelled]  # 0 pass, 1 fail: the verdicts' codes too
    at = ix.run.find(keys)
    has = at >= 0
    status = np.where(has, ix.run.status[np.maximum(at, 0)], 255)
    codes = ix.run.stale if ix.run.stale is not None else np.zeros(len(ix.run.key), np.uint8)
    stale = has & np.isin(np.where(has, codes[np.maximum(at, 0)], 0), [STATE, RUBRIC])
    fresh = has & ~stale
    scored = fresh & ((status == PASS) | (status == FAIL))
    rubric = (keys & np.uint64(NONE)).astype(np.int64)
    size = len(ix.rubric_names.names)

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(rubric[mask], minlength=size)

    pairs, agreed = count(scored), count(scored & (status == wanted))
    na, unscored = count(fresh & (status == NA_VERDICT)), count(fresh & (status == UNSCORED))
    stale_n, missing, total = count(stale), count(~has), count(np.ones(len(keys), bool))
    out = []
    for r in np.flatnonzero(total).tolist():
        c = coverage(int(pairs[r]), int(agreed[r]), int(na[r]), int(unscored[r]),
                     int(stale_n[r]), int(missing[r]))
        out.append((ix.rubric_names.names[r], c, agreed[r] / pairs[r] if pairs[r] else None))
    return out


def warnings(ix: Index) -> list[str]:
    """What leads the overview: the rubrics whose verdicts cover less than 90% of their
    pass/fail labels (worst first), and the stale verdicts."""
    covered = by_rubric(ix)
    accuracy = {name: a for name, _, a in covered}
    out = [f"Coverage first: {sentence(name, accuracy[name], c)}"
           for name, c in worst_first([(name, c) for name, c, _ in covered])]
    codes = ix.run.stale
    if codes is not None:
        import numpy as np

        state, rubric = int(np.sum(codes == STATE)), int(np.sum(codes == RUBRIC))
        if state or rubric:
            out.append(f"{state + rubric:,} of {len(codes):,} verdicts are stale: {state:,} "
                       "judged another state than build makes of the case today (or build "
                       f"makes none), {rubric:,} under another version of the rubric (see the "
                       "stale verdicts list); agree leaves them out of its figures. Judge "
                       "build's current output again.")
    return out


def stale_note(ix: Index) -> str:
    """What the stale check compared with, and what could not be checked."""
    import numpy as np

    codes = ix.run.stale
    if codes is None:
        return ""
    against = (f"build's output {ix.options.states}" if ix.options.states else
               "the states build makes of the cases today, with this rubric set")
    unchecked = int(np.sum(codes == NOT_CHECKED))
    return (f"Stale verdicts: checked against {against}"
            + (f"; {unchecked:,} could not be checked (no hash, a rubric not in the set, or a "
               "case not in the cases file)" if unchecked else "") + ".")


def table(ix: Index) -> str:
    """The coverage of every rubric with a pass/fail label, as an HTML table."""
    rows = []
    for name, c, accuracy in by_rubric(ix):
        cells = [escape(name)] + [f"{n:,}" for n in (c.labels, c.scored)]
        cells += [share(accuracy), share(c.accuracy_all_labels)]
        cells += [f"{c.left_out[k]:,}" for k in ("na_verdicts", "unscored", "stale",
                                                  "no_verdict")]
        rows.append("<tr>" + "".join(f"<td{'' if i == 0 else NUM}>{v}</td>"
                                     for i, v in enumerate(cells)) + "</tr>")
    if not rows:
        return '<p class="muted">No pass or fail label: nothing to compare the verdicts with.</p>'
    head = ["rubric", "pass/fail labels", "scored", "accuracy (scored)", "over all labels",
            "na verdicts", "unscored", "stale", "no verdict"]
    return ('<div class="scroll"><table class="list"><thead><tr>'
            + "".join(f"<th{'' if i == 0 else NUM}>{escape(h)}</th>"
                      for i, h in enumerate(head))
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
            '<p class="note">scored: the labels with a pass or fail verdict that is not stale, '
            "over which the accuracy is computed; over all labels: the agreeing verdicts over "
            "every pass or fail label (one left out counts as not agreeing), as agree computes "
            "them.</p>")
