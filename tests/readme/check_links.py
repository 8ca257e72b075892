#!/usr/bin/env python3
"""Every relative link and image of the README and docs/ points to a file of the repository.

Usage: check_links.py REPO_ROOT. Prints each broken link as PAGE:LINE: TARGET and exits 1 when any is
broken. External links (http:, https:, mailto:) are not fetched: CI has no network. A `#anchor`
within a page is checked against the page's headings (GitHub's anchor rule: lower case, spaces to
'-', punctuation other than '-' and '_' dropped).
"""
import pathlib
import re
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page: pathlib.Path) -> set:
    found = set()
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def broken_links(root: pathlib.Path):
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    for page in pages:
        in_code = False
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                in_code = not in_code
            if in_code:
                continue
            for target in LINK.findall(line):
                if re.match(r"^(https?|mailto):", target):
                    continue
                path, _, anchor = target.partition("#")
                file = (page.parent / path).resolve() if path else page
                if not file.exists():
                    yield f"{page.relative_to(root)}:{number}: {target} (no such file)"
                elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                    yield f"{page.relative_to(root)}:{number}: {target} (no heading #{anchor})"


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check_links.py REPO_ROOT", file=sys.stderr)
        return 2
    broken = list(broken_links(pathlib.Path(sys.argv[1]).resolve()))
    for line in broken:
        print(line)
    print(f"{len(broken)} broken link(s)")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
