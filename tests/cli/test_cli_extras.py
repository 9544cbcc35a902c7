"""Every missing extra is named in the error: a strategy or an output that needs a package of an
extra the install lacks fails with one line saying which extra to install.

The missing package is made missing for real in a child interpreter (``sys.modules[name] = None``
makes Python's own import fail with ``ModuleNotFoundError``), so the error travels the path it
takes on an install without the extra."""

import configparser
import subprocess
import sys

import pytest

from conftest import ROOT
from spacy_clinchunk.extras import EXTRA_OF_MODULE, missing_extra_message, missing_module

NOTE = "Seizures since infancy. No fever.\n"


def run_without(module: str, args, tmp_path):
    note = tmp_path / "note.txt"
    note.write_text(NOTE, encoding="utf-8")
    code = (
        f"import sys; sys.modules[{module!r}] = None\n"
        "from spacy_clinchunk.cli import main\n"
        f"sys.exit(main([a.replace('NOTE', {str(note)!r}) for a in {list(args)!r}]))\n"
    )
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)


@pytest.mark.parametrize(
    "module, args, extra",
    [
        ("torch", ["chunk", "NOTE", "--strategy", "semantic"], "embed"),
        ("medspacy", ["chunk", "NOTE", "--strategy", "default"], "context"),
        ("pyarrow", ["chunk", "NOTE", "--strategy", "simple", "--format", "parquet", "-o", "out.parquet"], "parquet"),
        ("model2vec", ["chunk", "NOTE", "--strategy", "simple", "--engine", "local", "--format", "chroma",
                       "--embedder", "static", "-o", "out"], "static"),
    ],
)
def test_a_missing_extra_is_one_line_naming_it(module, args, extra, tmp_path):
    result = run_without(module, args, tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"pip install 'spacy-clinchunk[{extra}]'" in result.stderr or f"spacy-clinchunk[{extra}]" in result.stderr
    assert result.stdout == ""


def test_the_cause_chain_is_searched():
    try:
        try:
            import no_such_module_for_clinchunk  # noqa: F401
        except ImportError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert missing_module(outer) == "no_such_module_for_clinchunk"
        assert missing_extra_message(outer, "x") is None  # not one of ours: no advice
    err = ModuleNotFoundError("No module named 'torch.nn'", name="torch.nn")
    assert missing_extra_message(err, "clin_semantic_window") == (
        "clin_semantic_window needs torch, which is not installed: pip install 'spacy-clinchunk[embed]'"
    )


def test_every_named_extra_exists_in_setup_cfg():
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    assert set(EXTRA_OF_MODULE.values()) <= set(parser["options.extras_require"])
