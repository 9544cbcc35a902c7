"""Regenerate the pinned set per interpreter: ``constraints/py3.X.txt``.

For each interpreter (default: every CPython 3.11-3.13 that ``pyenv`` knows, plus
``python3``) this builds a fresh venv, resolves ``torch==<TORCH>`` together with
``.[every extra]`` of setup.cfg, and writes the result as ``name==version`` lines.

    python scripts/lock_constraints.py                 # all interpreters found
    python scripts/lock_constraints.py --python 3.12   # one
    python scripts/lock_constraints.py --install       # install + pip freeze (slower, proves it installs)

By default the resolution is pip's ``--dry-run --report`` (metadata only, no
multi-GB wheel downloads); ``--install`` installs into the venv and freezes it.
"""
from __future__ import annotations

import argparse
import configparser
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "constraints"
TORCH = "torch==2.13.0"
SUPPORTED = ("3.11", "3.12", "3.13")
OWN = {"spacy-clinchunk", "spacy_clinchunk"}


# Extras locked in their own set (constraints/<extra>-py3.X.txt) because they pin
# libraries older than the main set: spacy-transformers needs transformers<4.53.3.
SEPARATE = {"transformers": ("embed", "transformers", "test")}
# Main-set pins that a separate set may move (the libraries it pins older).
SEPARATE_UNPINNED = {"transformers": ("transformers", "tokenizers", "huggingface-hub", "huggingface_hub")}


def extras() -> List[str]:
    """Every extra declared in setup.cfg but the separately locked ones."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "setup.cfg", encoding="utf-8")
    return sorted(k for k in parser["options.extras_require"].keys() if k not in SEPARATE)


def find_python(version: str) -> Optional[str]:
    """An interpreter for ``version``: the one on PATH, else pyenv's (never a fixed path)."""
    from shutil import which

    for name in (f"python{version}",):
        exe = which(name)
        if exe and _runs(exe, version):
            return exe
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    for candidate in sorted(Path(root, "versions").glob(f"{version}*/bin/python{version}"), reverse=True):
        if _runs(str(candidate), version):
            return str(candidate)
    return None


def _runs(exe: str, version: str) -> bool:
    try:
        out = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == version


def _run(cmd: List[str]) -> None:
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)


def resolve(python: str, install: bool, wanted: List[str], keep: Optional[Path] = None,
            unpinned: tuple = ()) -> Dict[str, str]:
    """``{name: version}`` of everything pip picks for torch + the ``wanted`` extras under
    ``python``; with ``keep``, the pins of that file hold (but ``unpinned``) and only what
    is new gets resolved."""
    with tempfile.TemporaryDirectory(prefix="lock-") as tmp:
        venv = Path(tmp) / "venv"
        _run([python, "-m", "venv", str(venv)])
        pip = [str(venv / "bin" / "python"), "-m", "pip"]
        _run(pip + ["install", "-q", "--upgrade", "pip"])
        target = f"{ROOT}[{','.join(wanted)}]"
        held_args: List[str] = []
        if keep is not None and keep.is_file():
            held = Path(tmp) / "held.txt"
            lines = [line for line in keep.read_text(encoding="utf-8").splitlines()
                     if "==" in line and _name(line) not in {_name(u + "==") for u in unpinned}]
            held.write_text("\n".join(lines) + "\n", encoding="utf-8")
            held_args = ["-c", str(held)]
        if install:
            _run(pip + ["install", "-q", *held_args, TORCH])
            _run(pip + ["install", "-q", *held_args, target])
            frozen = subprocess.run(pip + ["freeze", "--exclude-editable"], capture_output=True, text=True, check=True)
            pins = dict(line.split("==", 1) for line in frozen.stdout.splitlines() if "==" in line)
        else:
            report = Path(tmp) / "report.json"
            _run(pip + ["install", "-q", *held_args, "--dry-run", "--ignore-installed", "--report", str(report), TORCH, target])
            data = json.loads(report.read_text(encoding="utf-8"))
            pins = {item["metadata"]["name"]: item["metadata"]["version"] for item in data["install"]}
    return {name: version for name, version in pins.items() if name.lower() not in OWN}


def _name(line: str) -> str:
    return re.sub(r"[-_.]+", "-", line.split("==", 1)[0].strip()).lower()


def write(version: str, pins: Dict[str, str], python: str, prefix: str = "") -> Path:
    OUT_DIR.mkdir(exist_ok=True)
    path = OUT_DIR / f"{prefix}py{version}.txt"
    what = f"the [{prefix.rstrip('-')}] extra's own set" if prefix else "every extra of setup.cfg"
    header = [
        f"# Pinned set for Python {version}: torch + {what}.",
        f"# Generated by scripts/lock_constraints.py with {Path(python).name}; do not edit by hand.",
    ]
    # a local label ("2.13.0+cpu": the build this machine's wheel has) would refuse other builds
    lines = [f"{name}=={pins[name].split('+', 1)[0]}"
             for name in sorted(pins, key=lambda n: re.sub(r"[-_.]+", "-", n).lower())]
    path.write_text("\n".join(header + lines) + "\n", encoding="utf-8")
    return path


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", choices=SUPPORTED, help="interpreter version (repeatable)")
    parser.add_argument("--install", action="store_true", help="install into the venv and pip freeze it")
    parser.add_argument("--fresh", action="store_true",
                        help="resolve everything anew (default: keep the current pins, resolve only what is new)")
    args = parser.parse_args(argv)
    status = 0
    for version in args.python or SUPPORTED:
        python = find_python(version)
        if python is None:
            print(f"skip: no Python {version} found (PATH or pyenv)", file=sys.stderr)
            continue
        main_file = OUT_DIR / f"py{version}.txt"
        jobs = [("", extras(), main_file, ())]
        jobs += [(f"{extra}-", list(wanted), main_file, SEPARATE_UNPINNED.get(extra, ()))
                 for extra, wanted in SEPARATE.items()]
        for prefix, wanted, keep, unpinned in jobs:
            own = OUT_DIR / f"{prefix}py{version}.txt"
            keep_file = None if args.fresh else (own if own.is_file() else keep)
            try:
                pins = resolve(python, args.install, wanted, keep_file, unpinned if keep_file == keep else ())
            except subprocess.CalledProcessError as err:
                print(f"error: Python {version} {prefix or 'main'}: {err}", file=sys.stderr)
                status = 1
                continue
            print(f"wrote {write(version, pins, python, prefix)} ({len(pins)} packages)")
    return status


if __name__ == "__main__":
    sys.exit(main())
