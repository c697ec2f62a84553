"""The table ``evalstream rubrics`` prints: what each rubric of a set does."""

from __future__ import annotations

from evalstream._checks.rubrics import RubricSet
from evalstream._render.tables import Block, Column, Paragraph, Table


def rubric_blocks(rubrics: RubricSet) -> list[Block]:
    """One row per rubric: id, kind, what it shows, when it applies, what its judge may
    answer (``allows_na``), its hash."""
    table = Table([Column("rubric"), Column("kind"), Column("shows"), Column("applies when"),
                   Column("answers"), Column("hash")],
                  title=f"{len(rubrics.rubrics)} rubrics from {', '.join(rubrics.sources)}")
    for r in rubrics.rubrics:
        # A pairwise rubric applies to a case id of both runs (build --pair-with) only.
        when = ["a pair (--pair-with)"] if r.pairwise else []
        when += [f"has {name}" for name in r.requires]
        when += [f"{key} in {', '.join(map(str, allowed))}" for key, _, allowed in r.when]
        answers = "pass, fail" + (", na" if r.allows_na and r.kind == "judge" else "")
        table.add(r.id, r.kind, ", ".join(r.shows), "; ".join(when) or "always", answers,
                  r.hash[:12])
    return [table, Paragraph(f"set hash {rubrics.hash}")]
