"""The README and docs/ stand alone: every link inside the repository resolves, nothing
points outside it, and the "design §N" citations in the code name sections that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_relative_links_resolve_inside_the_repository() -> None:
    for doc in DOCS:
        for target in LINK.findall(doc.read_text()):
            if re.match(r"[a-z]+://", target):
                continue
            path = (doc.parent / target).resolve()
            assert path.is_relative_to(ROOT), f"{doc.name} links outside the repository: {target}"
            assert path.exists(), f"{doc.name} links to a missing file: {target}"


def test_nothing_points_at_the_workspace_or_at_issues() -> None:
    for doc in DOCS:
        text = doc.read_text()
        assert "../shared" not in text and "DESIGN.md" not in text, doc.name
        assert not re.search(r"\bissues? \d+", text, re.I), f"{doc.name} mentions an issue"


def test_design_sections_cited_in_the_code_exist() -> None:
    headings = re.findall(
        r"^#{2,3} (\d+(?:\.\d+)?)\.? ", (ROOT / "docs" / "design.md").read_text(), re.M
    )
    sections = set(headings)
    cited: set[str] = set()
    for path in (ROOT / "minikafka").rglob("*.py"):
        cited |= set(re.findall(r"design §(\d+(?:\.\d+)?)", path.read_text()))
    assert cited, "the code cites no design section"
    # §12.4 cites the fourth item of §12: its section is 12.
    missing = sorted(c for c in cited if c not in sections and c.split(".")[0] not in sections)
    assert not missing, f"design sections cited but missing: {missing}"
