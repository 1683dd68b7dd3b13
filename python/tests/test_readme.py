"""The Python examples of the README and docs/python.md run as written (so they cannot rot)."""

import re

from conftest import REPO


def python_snippets(page, heading):
    """The ```python blocks under `## heading` of a Markdown page of the repo, in order."""
    text = (REPO / page).read_text()
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_docs_python_attention_snippet_runs():
    # It needs nothing but the package; test_model.py runs the README's, which needs the model.
    snippets = python_snippets("docs/python.md", "Attention from NumPy")
    assert snippets and len(snippets[0].splitlines()) <= 12
    exec(compile(snippets[0], "docs/python.md", "exec"), {})
