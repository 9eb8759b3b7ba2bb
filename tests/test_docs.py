"""The Markdown docs: relative links lead somewhere, and the README stays short with
the two-command quick start (a newcomer reads it first; the manual is in docs/)."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", REPO / "config" / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# [text](target): inline links only; images and reference-style links are not used here
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", flags=re.M | re.S)


def links(text: str) -> list[str]:
    # links inside code blocks are code, not links
    return LINK.findall(FENCE.sub("", text))


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    found = set()
    for heading in re.findall(r"^#{1,6}\s+(.*?)\s*$", FENCE.sub("", text), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        found.add(slug)
    return found


def broken_links(doc: Path) -> list[str]:
    broken = []
    for target in links(doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:: not checked offline
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        if not dest.is_file():
            broken.append(f"{target} (no file {dest})")
        elif anchor and anchor not in anchors(dest.read_text()):
            broken.append(f"{target} (no heading #{anchor} in {dest.name})")
    return broken


def test_the_docs_exist():
    assert len(DOCS) > 3, DOCS


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: str(d.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_and_heading(doc):
    assert broken_links(doc) == [], doc


def test_a_broken_link_is_found(tmp_path):
    """The check above can fail: a missing file and a missing heading are both reported."""
    (tmp_path / "there.md").write_text("# A heading\n")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "[ok](there.md#a-heading) [gone](missing.md) [no anchor](there.md#nope)\n"
        "```\n[in code](ignored.md)\n```\n"
    )
    broken = broken_links(doc)
    assert len(broken) == 2, broken
    assert broken[0].startswith("missing.md") and broken[1].startswith("there.md#nope")


def test_the_readme_is_short_with_the_two_command_quick_start():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 220
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S)
    assert block, "the quick start has no bash block"
    commands = [line.split("#")[0].strip() for line in block[1].splitlines()]
    assert [c for c in commands if c] == ["make report", "make test"]
