"""The table ``evalstream rubrics`` prints: what each rubric of a set does."""

from __future__ import annotations

from evalstream._checks.listing import RubricEntry
from evalstream._checks.rubrics import RubricSet
from evalstream._render.tables import Block, Column, Heading, Paragraph, Table


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


def entry_blocks(entries: list[RubricEntry]) -> list[Block]:
    """``rubrics --list``: a row per rubric (id, version, kind, whether its judge may answer
    na, the fields it reads), then the first line of each question, which a table column
    would cut to a few words."""
    table = Table([Column("rubric"), Column("version"), Column("kind"), Column("na"),
                   Column("reads")],
                  note="version: the rubric hash verdicts carry (its first 12 digits); na: "
                       "whether its judge may answer na; reads: the judge-state names it is "
                       "shown. --json gives every field.")
    for e in entries:
        table.add(e.id, e.version[:12], e.kind, "yes" if e.allows_na else "no",
                  ", ".join(e.reads))
    return [table, Heading("Questions"),
            *(Paragraph(f"{e.id}: {e.question}") for e in entries)]
