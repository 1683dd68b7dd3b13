"""The README's Python example runs as written (so it cannot rot)."""

import re

from conftest import REPO


def test_readme_python_snippet_runs():
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    snippets = re.findall(r"```python\n(.*?)```", section, re.S)
    # The first snippet needs nothing but the package; test_model.py runs the model's.
    assert snippets and len(snippets[0].splitlines()) <= 12
    exec(compile(snippets[0], "README.md", "exec"), {})
