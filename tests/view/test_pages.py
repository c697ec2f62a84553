"""The pages as HTML: golden files for the samples, every text from a file escaped (read
back with the standard library's HTML parser), the judge state checked against the
verdict's hash, the exposure tags, and records too large to show whole."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from evalstream._build.run import Options as BuildOptions
from evalstream._build.run import run as build
from evalstream._view.check import check_page
from evalstream._view.lists import Filters
from evalstream._view.pages import list_page, overview, rejects_page
from tests.helpers import ROOT, golden
from tests.view.support import (
    ID_PAYLOADS,
    LONG,
    PAYLOADS,
    hostile_dataset,
    site,
)

GOLDEN = Path(__file__).resolve().parent / "golden"
TAGS = {"html", "head", "meta", "title", "style", "body", "nav", "main", "h1", "h2", "h3", "p",
        "a", "b", "span", "div", "table", "thead", "tbody", "tr", "th", "td", "caption",
        "section", "details", "summary", "dl", "dt", "dd", "code", "bdi", "form", "label",
        "select", "option", "input", "button"}

# No handler (on...), no style attribute, nothing that loads (src): data reaches attributes
# only as an option's or a field's value, a title, or a relative link.
ATTRIBUTES = {"lang", "charset", "http-equiv", "content", "name", "class", "id", "href", "title",
              "method", "action", "value", "selected", "placeholder", "size", "type"}


class Structure(HTMLParser):
    """Every tag, attribute and text of a page, as the browser's parser would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def structure(html: str) -> Structure:
    parsed = Structure()
    parsed.feed(html)
    parsed.close()
    return parsed


def check_inert(html: str) -> Structure:
    """Only the page's own tags and attributes: no script, no handler, no style attribute,
    no link or form leaving the page's origin, one style element, one policy."""
    parsed = structure(html)
    names = [tag for tag, _ in parsed.tags]
    assert set(names) <= TAGS, set(names) - TAGS
    assert names.count("style") == 1 and names.count("script") == 0
    policies = [a for tag, a in parsed.tags if tag == "meta" and a.get("http-equiv")]
    assert len(policies) == 1 and "script-src" not in (policies[0]["content"] or "")
    assert (policies[0]["content"] or "").startswith("default-src 'none'")
    for tag, attrs in parsed.tags:
        for name, value in attrs.items():
            assert name in ATTRIBUTES, (tag, name)
            if name in ("href", "action", "src"):
                assert value is not None
                parts = urlsplit(value)
                assert not parts.scheme and not parts.netloc, (tag, value)
    return parsed


@pytest.fixture
def samples(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(ROOT)  # paths in the pages as a user gives them
    with site("data/samples/verdicts.jsonl", "data/samples/cases.jsonl",
              compare="data/samples/verdicts-b.jsonl") as s:
        yield s


def test_sample_pages_golden(samples: Any) -> None:
    lists = replace(samples, links=samples.links.at(1))  # served one folder down: list/NAME
    pages = {
        "overview.html": overview(samples, timings=False),
        "disagreements.html": list_page(lists, "disagreements", Filters(), 1)[0],
        "flips-tool-backed-claims.html": list_page(lists, "flips",
                                              Filters(rubric="tool-backed-claims"), 1)[0],
        "skipped-page-2.html": list_page(lists, "skipped", Filters(), 2)[0],
        "check-case-02-tool-backed-claims.html": check_page(samples, "case-02", "tool-backed-claims"),
        "check-case-26-policy-compliance.html": check_page(samples, "case-26",
                                                           "policy-compliance"),
        "check-case-39-escalation.html": check_page(samples, "case-39", "escalation"),
        "rejects.html": rejects_page(samples, None, None, 1),
    }
    for name, html in pages.items():
        assert html is not None
        check_inert(html)
        golden(name, html.encode(), GOLDEN)


def test_a_check_page_shows_what_the_judge_saw_and_said(samples: Any) -> None:
    html = check_page(samples, "case-02", "tool-backed-claims")
    assert html is not None
    text = " ".join(structure(html).text)
    verdict = next(json.loads(line) for line in
                   (ROOT / "data/samples/verdicts.jsonl").read_text().splitlines()
                   if '"case-02"' in line and '"tool-backed-claims"' in line)
    assert verdict["rationale"] in text
    assert verdict["state_hash"] in text and "this is the state the judge answered" in text
    assert "missed: the label fails it, the judge passed it" in text
    assert "pass -> fail" in text  # the other run
    # The shown fields are tagged shown; the harness fields never shown.
    tags = re.findall(r"<h3>([^<]+) <span class=\"tag (\w+)\">", html)
    assert ("Input (user)", "shown") in tags and ("Tool events", "shown") in tags
    assert ("Metadata", "never") in tags and ("Expected labels", "never") in tags
    # The case's other checks are linked, each with its verdict or why it has none.
    assert "requires reference_material" in text and 'href="check?case=case-02&amp;rubric=' \
        "booking-succeeded" in html
    assert check_page(samples, "no-such-case", "tool-backed-claims") is None
    assert check_page(samples, "case-02", "no-such-rubric") is None


def test_the_state_from_states_is_checked_against_the_verdict(tmp_path: Path) -> None:
    cases = ROOT / "data/samples/cases.jsonl"
    states = tmp_path / "states.jsonl"
    build(BuildOptions(input=str(cases), output=str(states)))
    lines = (ROOT / "data/samples/verdicts.jsonl").read_text().splitlines()
    tampered = tmp_path / "verdicts.jsonl"
    tampered.write_text("\n".join(line.replace('"state_hash":"b78b07ecf28868778b511561d10f58c3"',
                                               '"state_hash":"' + "1" * 32 + '"')
                                  for line in lines) + "\n")
    with site(tampered, cases, states=str(states)) as s:
        html = check_page(s, "case-02", "tool-backed-claims")
        assert html is not None
        text = " ".join(structure(html).text)
        assert "as build wrote it (line" in text and "states.jsonl" in text
        assert "not the verdict's state_hash (" + "1" * 32 in text
        other = check_page(s, "case-01", "tool-backed-claims")
        assert other is not None and "this is the state the judge answered" in other
        # The two judge states the sample run left out (case-39 escalation, case-43
        # policy-compliance) are not judged, nor are the 135 states of the starter rubrics
        # (issue 30) it did not run; without --states they are labels without a verdict.
        kinds = dict(s.lists["skipped"].counts(s.index, "kind"))
        assert kinds["not judged"] == 2 + 135 and "labelled, no verdict" not in kinds
        html = check_page(s, "case-39", "escalation")
        assert html is not None and "build wrote a judge state for this check" in html
        assert "as build wrote it (line" in html


@pytest.mark.slow
@pytest.mark.parametrize("make", ["pages", "lists"])
def test_hostile_text_is_inert_everywhere(tmp_path: Path, make: str) -> None:
    paths = hostile_dataset(tmp_path)
    with site(paths["verdicts"], paths["cases"], compare=str(paths["compare"])) as s:
        if make == "lists":
            pages = [overview(s), rejects_page(s, None, None, 1)]
            for name in s.lists.available():
                lst = s.lists[name]
                pages.append(list_page(s, name, Filters(), 1)[0])
                for dim in ("rubric", "group", "kind", "source"):
                    for value, _ in lst.counts(s.index, dim)[:3]:
                        pages.append(list_page(s, name, Filters(**{dim: value}), 1)[0])
        else:
            pages = [check_page(s, case_id, rubric) or "" for case_id in ID_PAYLOADS
                     for rubric in ID_PAYLOADS[:2]]
        for html in pages:
            parsed = check_inert(html)
            text = "".join(parsed.text)
            assert "\u202e" not in text and "\x00" not in text and "\x1b" not in text
        joined = "".join("".join(structure(p).text) for p in pages)
        for payload in PAYLOADS[:7]:
            assert payload in joined  # shown, as text
        assert "U+202E" in joined  # the override, marked
        if make == "pages":  # a 200,000-character field whole: 2,000 shown, the rest folded
            assert LONG[:2_000] + "198,000 more characters" in joined
            assert "198,000 more characters (200,000 in all)" + LONG[2_000:] in joined


def test_a_record_too_large_to_show_whole_is_cut_and_says_so(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    big = {"id": "big", "input": "i", "output": "o",
           "messages": [{"id": f"m{i}", "role": "user", "content": "z" * 200_000}
                        for i in range(25)]}
    cases.write_text(json.dumps(big) + "\n")
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(json.dumps({"case_id": "big", "rubric_id": "tool-backed-claims",
                                    "status": "pass"}) + "\n")
    with site(verdicts, cases) as s:
        html = check_page(s, "big", "tool-backed-claims")
        assert html is not None
        assert len(html) < 1_000_000  # 25 texts cut at 20,000 characters, not 5 MB
        text = " ".join(structure(html).text)
        assert "each text is cut at 20,000 characters" in text
        assert "180,000 more characters are not shown" in text
        assert 'href="raw/cases/0"' in html


def test_a_case_with_many_checks_links_the_first_hundred_and_counts_the_rest(
        tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "many", "input": "i", "output": "o"}) + "\n")
    verdicts = tmp_path / "verdicts.jsonl"
    rubrics = [f"r{i:03d}" for i in range(250)] + ["x" * 200]
    verdicts.write_text("".join(json.dumps({"case_id": "many", "rubric_id": r,
                                            "status": "pass"}) + "\n" for r in rubrics))
    with site(verdicts, cases) as s:
        html = check_page(s, "many", "r200")  # past the first hundred: still shown, marked
        assert html is not None
        siblings = html[html.index('<div class="siblings">'):]
        siblings = siblings[:siblings.index("</div>")]
        assert siblings.count("<bdi>") == 100
        assert '<span class="here"><bdi>r200</bdi></span>' in siblings
        assert "<bdi>r000</bdi>" in siblings and "<bdi>r099</bdi>" not in siblings
        in_set = len(s.index.rubrics.rubrics)  # the rubric set's checks are listed too
        assert f"and {251 + in_set - 100} more" in siblings
        long_page = check_page(s, "many", "x" * 200)
        assert long_page is not None and "x" * 79 + "…" in long_page


def test_token_figures_read_in_every_record_shape() -> None:
    from evalstream._view.check import _tokens_line

    counted = {"tokenizer": "o200k_base", "budget": 32000,
               "bytes": {"state": 900, "longest_question": 1462, "total": 2362},
               "exact": {"state": 200, "longest_question": 295, "total": 495}}
    assert _tokens_line(counted) == ("state 200 + longest question 295 = 495 of a budget of "
                                     "32,000 (o200k_base; exact token counts)")
    del counted["exact"]
    assert _tokens_line(counted).startswith("state 900 + longest question 1,462 = 2,362 of a "
                                            "budget of 32,000 (o200k_base; UTF-8 bytes")
    before = {"state": 196, "longest_question": 1566, "total": 1762, "budget": 32000,
              "tokenizer": "cl100k_base", "method": "bpe"}  # the older shape
    assert _tokens_line(before) == ("state 196 + longest question 1,566 = 1,762 of a budget "
                                    "of 32,000 (cl100k_base; exact token counts)")


def test_cases_in_several_files_show_as_one_file_does(tmp_path: Path) -> None:
    # Issue 30: view took one cases file. Several (or a glob) are read in order as one, as
    # build reads them; a record is read back from the file its offset falls in, and a
    # part that changes after indexing is named.
    from evalstream._view.records import FileChanged

    lines = (ROOT / "data/samples/cases.jsonl").read_text().splitlines(keepends=True)
    parts = [tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"]
    for i, part in enumerate(parts):
        part.write_text("".join(lines[i * 16:(i + 1) * 16]))
    glob = str(tmp_path / "*.jsonl")
    with site() as one, site(cases=glob, case_inputs=[glob]) as several:
        assert several.index.options.case_files() == [str(p) for p in parts]
        assert several.index.files["cases"].size == sum(p.stat().st_size for p in parts)
        for case_id, rubric in (("case-02", "tool-backed-claims"), ("case-26",
                                "policy-compliance"), ("case-39", "escalation"),
                                ("case-48", "task-success")):
            page = check_page(several, case_id, rubric)
            assert page is not None
            assert page.replace(glob, "data/samples/cases.jsonl") == \
                check_page(one, case_id, rubric).replace(
                    str(ROOT / "data/samples/cases.jsonl"), "data/samples/cases.jsonl")
        assert [several.source.case_id(r) for r in range(several.index.n_cases)] == \
            [one.source.case_id(r) for r in range(one.index.n_cases)]
        parts[2].write_text(parts[2].read_text() + "\n")
        with pytest.raises(FileChanged, match=re.escape(f"{parts[2]} changed after view")):
            several.source.case(several.index.n_cases - 1)
        assert several.source.case(0)[1].id == "case-01"  # the other parts still read


def test_the_command_line_takes_cases_repeated_or_a_glob(tmp_path: Path) -> None:
    from evalstream._cli import main

    lines = (ROOT / "data/samples/cases.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "a.jsonl").write_text("".join(lines[:30]))
    (tmp_path / "b.jsonl").write_text("".join(lines[30:]))
    verdicts = str(ROOT / "data/samples/verdicts.jsonl")
    pages = []
    for name, cases in (("one", ["--cases", str(ROOT / "data/samples/cases.jsonl")]),
                        ("repeated", ["--cases", str(tmp_path / "a.jsonl"), "--cases",
                                      str(tmp_path / "b.jsonl")]),
                        ("glob", ["--cases", str(tmp_path / "*.jsonl")])):
        folder = tmp_path / name
        assert main(["view", verdicts, *cases, "--export", str(folder), "-q"]) == 0
        page = (folder / "lists" / "disagreements.html").read_text()
        pages.append(re.sub(r"<p class=\"note\">.*?</p>", "", page))
    assert pages[0] == pages[1] == pages[2]
