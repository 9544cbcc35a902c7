"""The house: no import cycle inside the package, and no wing imports a wing above it.

Imports are read from the source (every ``import`` / ``from`` statement, including the
lazy ones inside functions, which is where cycles like to hide), so these tests need no
optional dependency and run in milliseconds.
"""
import ast
import sys
import importlib
from pathlib import Path
from typing import Dict, List, Set

import pytest

import spacy_clinchunk

PACKAGE_DIR = Path(spacy_clinchunk.__file__).resolve().parent
PACKAGE = "spacy_clinchunk"

# floor of each wing: a module may import its own wing and wings on lower floors only
FLOORS: Dict[str, int] = {
    "ground": 0,  # attrs, spans, resources_io, fileio, logs: top-level modules
    "embed": 1,
    "llm": 1,
    "assertion": 1,
    "groundtruth": 1,
    "components": 2,
    "pipeline": 3,
    "export": 4,
    "corpus": 5,
    "cli": 6,
}
PUBLIC_FACE = {"spacy_clinchunk", "spacy_clinchunk.__main__"}  # may reach any wing (lazily)
MAX_LINES = 450  # "no module over ~400 lines unless it is one idea": the few exceptions are listed
ONE_IDEA = {
    # module: why it is one idea
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


DATA_FOLDERS = {"models", "configs", "resources"}  # shipped data (an installed wheel has them in the package)


def modules() -> Dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if set(path.relative_to(PACKAGE_DIR).parts[:1]) & DATA_FOLDERS:
            continue
        found[module_name(path)] = path
    return found


def imports_of(name: str, path: Path, known: Set[str]) -> Set[str]:
    """Package modules that ``name`` imports (``from x import y`` counts y when y is a module)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    targets: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                root = ".".join(base + ([node.module] if node.module else []))
            else:
                root = node.module or ""
            targets.add(root)
            targets.update(f"{root}.{alias.name}" for alias in node.names)
    found = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name and not (name.startswith(target + ".")):  # a module's own package is implicit
            found.add(target)
    return found


@pytest.fixture(scope="module")
def graph() -> Dict[str, Set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(name, path, known) for name, path in found.items()}


def wing_of(name: str) -> str:
    parts = name.split(".")
    if len(parts) == 1 or name in PUBLIC_FACE:
        return "face"
    if parts[1] in FLOORS:
        return parts[1]
    if len(parts) == 2:
        return "ground"
    raise AssertionError(f"{name} is in no wing: add its folder to FLOORS")


def test_no_import_cycle(graph):
    cycles: List[List[str]] = []
    state: Dict[str, int] = {}  # 1 on the stack, 2 done
    stack: List[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                cycles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_no_wing_imports_a_wing_above_it(graph):
    upward = []
    for name, targets in graph.items():
        wing = wing_of(name)
        if wing == "face":
            continue
        for target in targets:
            other = wing_of(target)
            if other == "face":
                if target == PACKAGE and name.count(".") >= 1:
                    continue  # ``from .. import __version__``: the version is on the ground floor
                upward.append(f"{name} -> {target}")
            elif other != wing and FLOORS[other] >= FLOORS[wing]:
                upward.append(f"{name} ({wing}, floor {FLOORS[wing]}) -> {target} ({other}, floor {FLOORS[other]})")
    assert not upward, "imports that do not go down: " + "; ".join(sorted(upward))


def test_every_wing_says_what_it_is():
    for folder in sorted(p for p in PACKAGE_DIR.iterdir() if (p / "__init__.py").is_file()):
        if folder.name in DATA_FOLDERS:
            continue
        module = importlib.import_module(f"{PACKAGE}.{folder.name}")
        assert module.__doc__ and module.__doc__.strip(), f"{folder.name}/__init__.py has no docstring"


def test_modules_stay_small():
    big = []
    for name, path in modules().items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES and name not in ONE_IDEA:
            big.append(f"{name} ({lines} lines)")
    assert not big, "modules over ~400 lines: " + ", ".join(big)


@pytest.mark.parametrize("name", sorted(spacy_clinchunk.__all__))
def test_public_names_resolve(name):
    assert getattr(spacy_clinchunk, name) is not None


def test_ruff_lint_is_clean():
    """The lint configured in pyproject.toml (.ci/run runs it too) passes on the whole tree."""
    import subprocess

    pytest.importorskip("ruff")
    root = PACKAGE_DIR.parent
    run = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "spacy_clinchunk", "tests", "bench", "scripts"],
        cwd=root, capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stdout[-2000:]


def test_test_folders_mirror_the_wings():
    """tests/<wing>/ holds the tests of that wing; the house-wide checks stay at the top."""
    tests = PACKAGE_DIR.parent / "tests"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and list(p.glob("test_*.py"))}
    assert folders <= set(FLOORS) | {"training"}, folders - set(FLOORS)
    top = sorted(p.name for p in tests.glob("test_*.py"))
    assert top == ["test_architecture.py", "test_docs_examples.py", "test_packaging.py", "test_resources.py"]
