"""The static export: self-contained pages whose every link resolves inside the folder, the
same bytes on a rerun, ``--limit``, the folder written whole or not at all, and ``agree`` and
``compare`` linking their example ids to its pages."""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from evalstream._cli import main
from evalstream._verdicts.links import check_page
from evalstream.errors import OutputError
from tests.view.support import CASES, VERDICTS, VERDICTS_B
from tests.view.test_pages import check_inert, structure

SAMPLES_ARGS = [str(VERDICTS), "--cases", str(CASES), "--compare", str(VERDICTS_B), "-q"]


def export(folder: Path, *args: str) -> int:
    return main(["view", *SAMPLES_ARGS, "--export", str(folder), *args])


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def links(folder: Path) -> list[tuple[Path, str]]:
    """(page, href) of every link of every page."""
    found = []
    for page in folder.rglob("*.html"):
        for tag, attrs in structure(page.read_text()).tags:
            if tag == "a" and attrs.get("href"):
                found.append((page, attrs["href"] or ""))
    return found


@pytest.mark.slow  # parses a thousand links (6 s)
def test_every_link_resolves_inside_the_folder_and_nothing_leaves_it(tmp_path: Path) -> None:
    folder = tmp_path / "review"
    assert export(folder) == 0
    files = tree(folder)
    assert "index.html" in files and "evalstream-view.json" in files
    for name, data in files.items():
        if name.endswith(".html"):
            check_inert(data.decode())
            assert b"<form" not in data  # filters are pages in an export, not a form
    checked = 0
    for page, href in links(folder):
        parts = urlsplit(href)
        assert not parts.scheme and not parts.netloc and not parts.query, href
        if parts.path:
            target = (page.parent / unquote(parts.path)).resolve()
            assert target.is_file() and folder.resolve() in target.parents, (page, href)
            checked += 1
    assert checked > 1000
    marker = json.loads(files["evalstream-view.json"])
    # The na verdict on a pass label is a disagreement too (issue 25): one more filter page.
    assert marker["lists"]["disagreements"] == {"entries": 8, "pages": 13}
    assert marker["checks"] == len([n for n in files if n.startswith("checks/")])
    # Every disagreement has its page, named as agree and compare name it.
    for line in VERDICTS.read_text().splitlines():
        v = json.loads(line)
        assert check_page(v["case_id"], v["rubric_id"]) in files


@pytest.mark.slow
def test_the_same_inputs_give_the_same_bytes(tmp_path: Path) -> None:
    assert export(tmp_path / "a") == 0
    assert export(tmp_path / "b") == 0
    a, b = tree(tmp_path / "a"), tree(tmp_path / "b")
    assert a.keys() == b.keys()
    differ = [n for n in a if a[n] != b[n] and n != "evalstream-view.json"]
    assert differ == []
    marker_a, marker_b = (json.loads(t["evalstream-view.json"]) for t in (a, b))
    assert marker_a.pop("folder") != marker_b.pop("folder") and marker_a == marker_b


@pytest.mark.slow
def test_limit_keeps_the_first_entries_of_each_list_and_filter(tmp_path: Path) -> None:
    folder = tmp_path / "review"
    assert export(folder, "--limit", "3") == 0
    files = tree(folder)
    rows = {name: len(re.findall(rb'<td class="num">\d+</td><td class="key">', data))
            for name, data in files.items() if name.startswith("lists/")
            and not name.startswith("lists/rejects")}
    assert rows and max(rows.values()) == 3
    assert rows["lists/verdicts.html"] == 3
    assert b"The first 3 of 111 entries" in files["lists/verdicts.html"]
    # The pages written are exactly those of the entries listed.
    linked = {re.sub(r"^\.\./", "", h) for p, h in links(folder)
              if "checks/" in h and p.parent.name == "lists"}
    assert linked == {n for n in files if n.startswith("checks/")}


@pytest.mark.slow
def test_the_folder_is_written_whole_or_not_at_all(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert export(mine) == 2  # a folder of other files is never replaced
    assert tree(mine) == {"notes.txt": b"keep me"}
    folder = tmp_path / "review"
    assert export(folder, "--limit", "2") == 0
    first = tree(folder)
    assert export(folder, "--limit", "5") == 0  # an earlier export is replaced, whole
    second = tree(folder)
    assert len(second) > len(first)
    assert not set(first) - set(second) or all(n in second for n in first if "lists/" in n)
    (tmp_path / "file").write_text("x")
    assert export(tmp_path / "file") == 2
    from evalstream._files import outputs

    calls = {"n": 0}
    write = outputs.AtomicFolder.write

    def failing(self: outputs.AtomicFolder, name: str, data: bytes) -> None:
        calls["n"] += 1
        if calls["n"] == 40:
            raise OutputError("cannot write: disk full")
        write(self, name, data)

    monkeypatch.setattr(outputs.AtomicFolder, "write", failing)
    assert export(folder, "--limit", "50") == 2
    assert tree(folder) == second  # the earlier export is untouched
    assert sorted(os.listdir(tmp_path)) == ["file", "mine", "review"]  # no temporary left


def test_rejected_lines_are_listed_and_exit_1(tmp_path: Path) -> None:
    from tests.helpers import SAMPLES

    cases = tmp_path / "cases.jsonl"
    cases.write_bytes(CASES.read_bytes() + (SAMPLES / "bad.jsonl").read_bytes())
    folder = tmp_path / "review"
    assert main(["view", str(VERDICTS), "--cases", str(cases), "--export", str(folder),
                 "-q"]) == 1
    page = (folder / "lists" / "rejects.html").read_text()
    assert page.count("<tr><td>cases</td>") == 21
    assert "Unexpected text after the JSON object" in page


@pytest.mark.slow
def test_agree_and_compare_link_their_examples_to_the_export(tmp_path: Path) -> None:
    folder = tmp_path / "review"
    assert export(folder) == 0
    out = tmp_path / "out"
    out.mkdir()
    assert main(["agree", str(VERDICTS), str(CASES), "--view", str(folder), "--format", "json",
                 "-o", str(out / "agree.json"), "--html", str(out / "agree.html")]) == 0
    report = json.loads((out / "agree.json").read_text())
    listed = 0
    for r in report["rubrics"]:
        for kind, ids in r["examples"].items():
            pages = r["pages"][kind]
            assert len(pages) == len(ids) == len(r["rationales"][kind])
            for case_id, page in zip(ids, pages, strict=True):
                if page is not None:
                    assert Path(page).is_file() and page.endswith(check_page(case_id,
                                                                             r["rubric"]))
                    listed += 1
    assert listed > 20
    booking = next(r for r in report["rubrics"] if r["rubric"] == "tool-backed-claims")
    assert booking["examples"]["missed"] == ["case-02", "case-04"]
    assert booking["rationales"]["missed"][0].startswith("Every action the response claims")
    html = (out / "agree.html").read_text()
    hrefs = re.findall(r'<a href="([^"]+)">case-', html)
    assert len(hrefs) == listed
    assert all((out / h).resolve().is_file() for h in hrefs)
    assert main(["compare", str(VERDICTS), str(VERDICTS_B), "--view", str(folder),
                 "--format", "markdown", "-o", str(out / "compare.md")]) == 0
    md = (out / "compare.md").read_text()
    targets = re.findall(r"\]\(<([^>]+)>\)", md)
    assert targets and all((out / t).resolve().is_file() for t in targets)
    assert main(["agree", str(VERDICTS), str(CASES), "--view", str(tmp_path)]) == 2


# -- what an export may replace (issue 23, item 3) ---------------------------------------------
def _refused(capsys: pytest.CaptureFixture[str], folder: Path, *args: str) -> str:
    """The sentence of an export that must be refused (exit 2)."""
    capsys.readouterr()
    assert export(folder, "--limit", "1", *args) == 2
    return capsys.readouterr().err


def test_a_folder_is_an_earlier_export_only_by_its_full_manifest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    claimed = tmp_path / "claimed"
    claimed.mkdir()
    (claimed / "evalstream-view.json").write_text("")  # the marker's name is not enough
    (claimed / "notes.txt").write_text("keep me")
    err = _refused(capsys, claimed)
    assert "evalstream-view.json" in err and "--force" in err and "Traceback" not in err
    assert tree(claimed) == {"evalstream-view.json": b"", "notes.txt": b"keep me"}
    # An export's own manifest, copied beside other files, lists files the folder lacks and
    # not those it holds: still refused, naming them.
    assert export(tmp_path / "review", "--limit", "1") == 0
    (claimed / "evalstream-view.json").write_bytes(
        (tmp_path / "review" / "evalstream-view.json").read_bytes())
    assert "notes.txt" in _refused(capsys, claimed)
    assert (claimed / "notes.txt").read_text() == "keep me"


def test_files_an_earlier_export_did_not_write_are_never_deleted_silently(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    review = tmp_path / "review"
    assert export(review, "--limit", "1") == 0
    first = tree(review)
    assert json.loads(first["evalstream-view.json"])["written"] == sorted(
        n for n in first if n != "evalstream-view.json")
    assert export(review, "--limit", "1") == 0  # an earlier export, as it was: replaced
    assert tree(review) == first
    (review / "notes.txt").write_text("mine")
    (review / "lists" / "annotated.html").write_text("mine too")
    (review / "drafts").mkdir()
    err = _refused(capsys, review)
    assert "notes.txt" in err and "lists/annotated.html" in err and "drafts/" in err
    assert "--force" in err
    assert tree(review) == {**first, "notes.txt": b"mine", "lists/annotated.html": b"mine too"}
    assert export(review, "--limit", "1", "--force") == 0  # --force replaces it whole
    assert tree(review) == first and not (review / "drafts").exists()


@pytest.mark.parametrize("role", ["--cases", "--states", "--compare", "--rubrics", "verdicts"])
def test_no_input_may_lie_in_the_export_folder_even_with_force(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], role: str) -> None:
    from tests.helpers import SAMPLES

    review = tmp_path / "review"
    review.mkdir()
    if role == "--states":
        assert main(["build", str(CASES), str(tmp_path / "states.jsonl"), "-q"]) == 0
    source = {"--cases": CASES, "--states": tmp_path / "states.jsonl",
              "--compare": VERDICTS_B, "--rubrics": SAMPLES / "rubrics.toml",
              "verdicts": VERDICTS}[role]
    inside = review / "sub" / source.name
    inside.parent.mkdir()
    inside.write_bytes(source.read_bytes())
    (review / "evalstream-view.json").write_text("")  # as the issue found it: still refused
    (tmp_path / "link").symlink_to(review)
    for spelling, force in itertools.product(
            (inside, tmp_path / "link" / "sub" / source.name,
             review / ".." / "review" / "sub" / source.name), ([], ["--force"])):
        args = {"--cases": str(CASES), "verdicts": str(VERDICTS)}
        if role == "verdicts":
            args["verdicts"] = str(spelling)
        else:
            args[role] = str(spelling)
        argv = ["view", args.pop("verdicts"), *(x for kv in args.items() for x in kv),
                "--export", str(review), *force, "-q"]
        capsys.readouterr()
        assert main(argv) == 2, spelling
        err = capsys.readouterr().err
        assert "inside the export folder" in err and str(spelling) in err, err
        assert inside.read_bytes() == source.read_bytes()


def test_force_applies_to_the_export_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", str(VERDICTS), "--cases", str(CASES), "--force"]) == 2
    assert "--force applies to --export" in capsys.readouterr().err


def test_the_api_takes_force(tmp_path: Path) -> None:
    import evalstream
    from evalstream.errors import UsageError

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match=r"holds notes\.txt, which no export wrote"):
        evalstream.export_view(VERDICTS, CASES, mine, limit=1)
    report = evalstream.export_view(VERDICTS, CASES, mine, limit=1, force=True)
    assert report.files == len(report.written) + 1 == len(tree(mine))


def test_a_file_added_while_the_export_runs_is_not_deleted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from evalstream._files import outputs

    review = tmp_path / "review"
    assert export(review, "--limit", "1") == 0
    first = tree(review)
    write = outputs.AtomicFolder.write

    def meanwhile(self: outputs.AtomicFolder, name: str, data: bytes) -> None:
        (review / "notes.txt").write_text("written during the export")
        write(self, name, data)

    monkeypatch.setattr(outputs.AtomicFolder, "write", meanwhile)
    assert export(review, "--limit", "1") == 2
    assert "notes.txt" in capsys.readouterr().err
    assert tree(review) == {**first, "notes.txt": b"written during the export"}
    assert sorted(os.listdir(tmp_path)) == ["review"]  # no temporary left
