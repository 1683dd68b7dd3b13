#!/usr/bin/env python3
"""Fails on a dead relative link or #anchor in the README and docs/.

Every Markdown link and image outside code ([text](target), ![alt](target)) whose target is not a
URL must name a file or folder of the repo, and its #anchor a heading of the target page, as
GitHub makes anchors: the heading's text without its Markdown, lower-cased, punctuation dropped,
spaces turned into '-', a repeated heading's anchor suffixed -1, -2, ...

    python3 tests/docs/check_links.py REPO [PAGE.md ...]   (default: README.md, DEVELOPERS.md, docs/*.md)
"""

import re
import sys
from pathlib import Path

FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for n, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def anchor(heading):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    text = text.replace("`", "").replace("*", "")
    text = text.lower()
    text = "".join(c for c in text if c.isalnum() or c in "-_ ")
    return text.replace(" ", "-")


def anchors(page):
    seen = {}
    out = set()
    for _, line in prose_lines(page.read_text(encoding="utf-8")):
        m = HEADING.match(line)
        if not m:
            continue
        a = anchor(m.group(2))
        k = seen.get(a, 0)
        seen[a] = k + 1
        out.add(a if k == 0 else f"{a}-{k}")
    return out


def check(repo, page):
    errors = []
    for n, line in prose_lines(page.read_text(encoding="utf-8")):
        for m in LINK.finditer(CODE_SPAN.sub("", line)):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, ...
                continue
            path, _, frag = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(repo)}:{n}: {target}"
            if not dest.exists():
                errors.append(f"{where}: no such file")
            elif frag and dest.suffix == ".md" and frag not in anchors(dest):
                errors.append(f"{where}: {dest.relative_to(repo)} has no heading with anchor #{frag}")
    return errors


def main(argv):
    repo = Path(argv[1] if len(argv) > 1 else ".").resolve()
    pages = [repo / p for p in argv[2:]] or [repo / "README.md", repo / "DEVELOPERS.md",
                                               *sorted((repo / "docs").glob("*.md"))]
    errors = [e for page in pages for e in check(repo, page)]
    for e in errors:
        print(e)
    print(f"{len(pages)} pages, {len(errors)} dead links")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
