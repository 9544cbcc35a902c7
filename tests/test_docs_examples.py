"""Every Python and shell example in README.md and docs/*.md runs, and prints what the page shows.

A fenced ```python or ```bash block is an example. When a ```text block follows it (only
blank lines between), that is the output it must print. An HTML comment on the line
just above a block changes how it runs:

* ``<!-- test: slow -->``: needs a slow resource (the embedding model, medspaCy); marked slow;
* ``<!-- skip-test: REASON -->``: cannot run here at all (a real Ollama server, a Ray
  cluster, installing packages); the reason is shown in the test report. Keep these rare.

Examples run in a scratch working directory where ``configs/`` and ``resources/`` resolve
as in the repository; no example reads ``../shared`` (a user's clone has none). Python blocks run in-process, each in a
fresh namespace; shell blocks run under ``bash -euo pipefail`` with this interpreter
first on ``PATH`` (so ``python -m spacy_clinchunk`` is the package under test).
Config excerpts (```ini) are not run, but every setting they name must exist in the code.
"""
import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import pytest
import srsly

from conftest import ROOT

from spacy_clinchunk.embed.embedders import distilled_models_folder

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
FENCE = re.compile(r"^```\s*([\w-]*)\s*$")
MARKER = re.compile(r"^<!--\s*(skip-test|test)\s*:\s*(.*?)\s*-->$")
README_MAX_LINES = 200


@dataclass
class Example:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str  # "python" or "bash"
    code: str
    expected: Optional[str] = None
    skip: Optional[str] = None
    slow: bool = False

    @property
    def id(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page.name
        return f"{page}:{self.line}"


def fenced_blocks(lines: List[str]):
    """(fence line index, language, body lines, index after the closing fence) per block."""
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        yield i, match.group(1).lower(), lines[i + 1 : end], end + 1
        i = end + 1


def page_examples(page: Path) -> List[Example]:
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks = list(fenced_blocks(lines))
    found: List[Example] = []
    for n, (start, lang, body, after) in enumerate(blocks):
        if lang not in RUNNABLE:
            continue
        example = Example(page, start + 1, RUNNABLE[lang], "\n".join(body) + "\n")
        above = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(above)
        if marker and marker.group(1) == "skip-test":
            assert marker.group(2), f"{example.id}: skip-test needs a reason"
            example.skip = marker.group(2)
        elif marker:
            assert marker.group(2) == "slow", f"{example.id}: unknown marker {above}"
            example.slow = True
        following = blocks[n + 1] if n + 1 < len(blocks) else None
        if following and following[1] == "text" and not any(l.strip() for l in lines[after : following[0]]):
            example.expected = "\n".join(following[2])
        found.append(example)
    return found


EXAMPLES = [example for page in PAGES for example in page_examples(page)]


def _param(example: Example):
    marks = []
    if example.skip:
        marks.append(pytest.mark.skip(reason=f"{example.id}: {example.skip}"))
    if example.slow or example.lang == "bash":  # shell blocks start a fresh interpreter
        marks.append(pytest.mark.slow)
    return pytest.param(example, id=example.id, marks=marks)


@pytest.fixture(scope="session")
def distilled_models() -> Path:
    """The folder of distilled static models in the user's cache, which the ``static_embedder``
    fixture fills: an example that embeds with ``static`` in a cache of its own would distil
    MiniLM again (half a minute)."""
    folder = distilled_models_folder()
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


@pytest.fixture
def workdir(tmp_path, monkeypatch, distilled_models):
    """A scratch checkout: configs/ and resources/ resolve as in the repository. Its cache is
    its own (LLM answers, manifests), apart from the distilled static models."""
    work = tmp_path / "work"
    work.mkdir()
    for name in ("configs", "resources", "scripts", "bench"):
        (work / name).symlink_to(ROOT / name, target_is_directory=True)
    monkeypatch.chdir(work)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv("SPACY_CLINCHUNK_CACHE", str(cache))
    distilled_models_folder().symlink_to(distilled_models, target_is_directory=True)
    return work


def normalized(text: str) -> List[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def run_python(example: Example) -> str:
    out = io.StringIO()
    namespace = {"__name__": "__main__"}
    with contextlib.redirect_stdout(out):
        exec(compile(example.code, example.id, "exec"), namespace)
    return out.getvalue()


BENCH_SCRIPT = re.compile(r"\bbench/(\w+)\.py\b")


def run_bench_commands(example: Example) -> None:
    """A block that runs a benchmark is a measurement, not an example (minutes of CPU): each
    script it names must exist and accept its command line (``--help`` runs nothing)."""
    for name in BENCH_SCRIPT.findall(example.code):
        script = ROOT / "bench" / f"{name}.py"
        assert script.is_file(), f"{example.id}: no such benchmark {script.relative_to(ROOT)}"
        done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{example.id}: bench/{name}.py --help failed:\n{done.stderr[-2000:]}"


def run_bash(example: Example, cwd: Path) -> str:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.setdefault("HF_HUB_OFFLINE", "1")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", example.code],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, f"{example.id} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.parametrize("example", [_param(e) for e in EXAMPLES])
def test_example_runs_and_prints_what_the_page_shows(example: Example, workdir):
    if example.lang == "bash" and BENCH_SCRIPT.search(example.code):
        run_bench_commands(example)
        return
    printed = run_python(example) if example.lang == "python" else run_bash(example, workdir)
    if example.expected is not None:
        assert normalized(printed) == normalized(example.expected), example.id


def test_every_page_is_scanned_and_examples_are_found():
    pages = {e.page.name for e in EXAMPLES}
    assert "README.md" in pages
    assert len(EXAMPLES) >= 10
    skipped = [e for e in EXAMPLES if e.skip]
    assert len(skipped) * 5 <= len(EXAMPLES), "opting out must stay rare: " + ", ".join(e.id for e in skipped)


def test_the_harness_reads_markers_and_outputs(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- skip-test: needs a GPU -->\n```python\nimport torch\n```\n\n"
        "<!-- test: slow -->\n```bash\necho hi\n```\n\n```text\nhi\n```\n\n```ini\n[x]\n```\n",
        encoding="utf-8",
    )
    first, second = page_examples(page)
    assert (first.lang, first.skip, first.expected) == ("python", "needs a GPU", None)
    assert (second.lang, second.slow, second.expected, second.code) == ("bash", True, "hi", "echo hi\n")


def test_readme_is_short():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= README_MAX_LINES


def test_every_docs_page_is_in_the_mkdocs_nav():
    config = srsly.read_yaml(ROOT / "mkdocs.yml")

    def walk(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)

    listed = set(walk(config["nav"]))
    on_disk = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert on_disk == listed


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mkdocs") is None and not (Path(sys.executable).parent / "mkdocs").exists(),
                    reason="mkdocs not installed (pip install -e '.[docs]')")
def test_docs_site_builds_strictly(tmp_path):
    mkdocs = Path(sys.executable).parent / "mkdocs"
    command = [str(mkdocs) if mkdocs.exists() else "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def config_excerpts():
    """(id, section, settings) of every ```ini component excerpt in README and docs."""
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for start, lang, body, _ in fenced_blocks(lines):
            if lang != "ini":
                continue
            section, settings = None, {}
            for line in body + ["[end]"]:
                line = line.split("#", 1)[0].strip()  # inline comments explain settings in the docs
                if line.startswith("["):
                    if section and section.startswith("components."):
                        yield f"{page.relative_to(ROOT)}:{start + 1}", section, settings
                    section, settings = line.strip("[]"), {}
                elif "=" in line and section:
                    key, value = (part.strip() for part in line.split("=", 1))
                    settings[key] = value


def accepted_settings(settings: dict) -> set:
    """Setting names the code accepts for a component or registered-function section."""
    import inspect

    import spacy
    from spacy.language import Language
    from spacy.util import registry

    spacy.blank("en")  # loads the spacy_factories entry points
    if "factory" in settings:
        return set(Language.get_factory_meta(settings["factory"].strip('"')).default_config) | {"factory"}
    key, function = next((k, v.strip('"')) for k, v in settings.items() if k.startswith("@"))
    registered = getattr(registry, key[1:]).get(function)
    return set(inspect.signature(registered).parameters) | {k for k in settings if k.startswith("@")}


EXCERPTS = list(config_excerpts())


def test_a_wrong_setting_name_is_caught():
    assert "window" not in accepted_settings({"factory": '"clin_semantic_window"', "window": "7"})
    assert "base_url" in accepted_settings({"@misc": '"spacy_clinchunk.Ollama.v1"'})


@pytest.mark.parametrize("where,section,settings", EXCERPTS, ids=[f"{w}:{s}" for w, s, _ in EXCERPTS])
def test_config_excerpts_name_real_settings(where, section, settings):
    """A renamed or removed setting must not survive in the docs."""
    if "factory" not in settings and not any(k.startswith("@") for k in settings):
        pytest.skip("not a component or registered-function section")
    if "factory" not in settings and not any(v.strip('"').startswith("spacy_clinchunk.") for v in settings.values()):
        pytest.skip("another package's registered function")
    unknown = set(settings) - accepted_settings(settings)
    assert not unknown, f"{where} [{section}]: no such setting {sorted(unknown)}"
