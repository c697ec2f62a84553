"""Names cut to fit a column or a chart's margin, never two alike.

Group names (metadata values joined with " / ") can be long, and names that share a long
beginning differ only at their end: a middle ellipsis made tau2-bench's eight groups look
like four pairs. A name is cut at its end, and when cut names would read alike each gets a
number (``airline / retail…~1``, ``airline / retail…~2``); the full names are given in a key
under the table (and in the chart's tooltips).
"""

from __future__ import annotations

from collections.abc import Iterable

MARK = "…"


def cut_names(names: Iterable[str], width: int) -> dict[str, str]:
    """Each distinct name mapped to what is shown for it: itself when it fits ``width``
    characters, else its beginning and "…" (with ``~N`` when cuts would read alike). No two
    names are shown alike."""
    unique = list(dict.fromkeys(names))
    shown = {name: name for name in unique if len(name) <= width}
    taken = set(shown.values())
    by_cut: dict[str, list[str]] = {}
    for name in unique:
        if name not in shown:
            by_cut.setdefault(name[:max(1, width - 1)] + MARK, []).append(name)
    for cut, group in by_cut.items():
        if len(group) == 1 and cut not in taken:
            shown[group[0]] = cut
            taken.add(cut)
            continue
        for i, name in enumerate(group, 1):
            suffix = f"~{i}"
            label = name[:max(1, width - 1 - len(suffix))] + MARK + suffix
            while label in taken:  # only if a name itself ends like a numbered cut
                suffix += "'"
                label = name[:max(1, width - 1 - len(suffix))] + MARK + suffix
            shown[name] = label
            taken.add(label)
    return shown


def key_note(shown: dict[str, str]) -> str | None:
    """The key of the names that were cut ("Names cut to fit: a… = abc; ..."), or None."""
    cut = [(label, name) for name, label in shown.items() if label != name]
    if not cut:
        return None
    return "Names cut to fit: " + "; ".join(f"{label} = {name}" for label, name in cut) + "."
