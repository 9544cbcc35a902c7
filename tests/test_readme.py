"""The README's self-contained Python examples run and print what the README says."""
import contextlib
import io
import re

import pytest

from conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def python_block_after(heading: str) -> str:
    section = README.split(heading, 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, f"no python block after {heading}"
    return match.group(1)


def expected_output(block: str) -> str:
    """The comment lines right after the last print() are the documented output."""
    lines = block.rstrip().splitlines()
    tail = []
    for line in reversed(lines):
        if not line.startswith("#"):
            break
        tail.append(line[1:].strip())
    return " ".join(reversed(tail))


@pytest.mark.parametrize(
    "heading",
    ["## Using it from Python", "## Structural chunkers: clin_punct_splitter, clin_conj_splitter, clin_cleaner"],
)
def test_readme_example_prints_the_documented_output(heading):
    block = python_block_after(heading)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, f"README:{heading}", "exec"), {})
    printed = " ".join(out.getvalue().split())
    assert printed == " ".join(expected_output(block).split())
