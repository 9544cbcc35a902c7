"""Packaging: entry points match what the code registers, cheap import, wheel ships resources."""
import configparser
import os
import subprocess
import sys
import textwrap
import venv

import pytest

from conftest import ROOT


def entry_points_from_setup_cfg():
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    groups = {}
    for group, body in parser["options.entry_points"].items():
        entries = {}
        for line in body.strip().splitlines():
            name, target = (part.strip() for part in line.split("=", 1))
            entries[name] = target
        groups[group] = entries
    return groups


def test_every_entry_point_resolves_to_a_registered_object():
    import importlib

    groups = entry_points_from_setup_cfg()
    assert "clin_punct_splitter" in groups["spacy_factories"]
    for group, entries in groups.items():
        for name, target in entries.items():
            module, attribute = target.split(":")
            obj = getattr(importlib.import_module(module), attribute)
            assert callable(obj), f"{group}:{name} -> {target} is not callable"


def test_decorated_factories_and_functions_equal_entry_points():
    """Every factory / registered function defined in the package is listed in setup.cfg."""
    import importlib
    import pkgutil

    import spacy_clinchunk
    from spacy.util import registry

    for info in pkgutil.walk_packages(spacy_clinchunk.__path__, "spacy_clinchunk."):
        if info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)
    groups = entry_points_from_setup_cfg()
    factories = {name for name in registry.factories.get_all() if name.startswith("clin_")}
    assert factories == set(groups["spacy_factories"])
    for registry_name in ("misc", "scorers", "readers", "architectures"):
        ours = {n for n in getattr(registry, registry_name).get_all() if n.startswith("spacy_clinchunk.")}
        assert ours == set(groups.get(f"spacy_{registry_name}", {})), registry_name


def test_blank_pipeline_does_not_import_heavy_libraries():
    code = textwrap.dedent(
        """
        import sys, spacy
        before = set(sys.modules)  # spaCy/thinc may import torch themselves; we must add nothing heavy
        nlp = spacy.blank("en")
        nlp.add_pipe("clin_punct_splitter")
        nlp("No fever, no chills.")
        heavy = [m for m in ("torch", "sentence_transformers", "medspacy", "tiktoken", "ray", "chromadb", "requests") if m in set(sys.modules) - before]
        print(",".join(heavy))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


@pytest.mark.slow
def test_wheel_ships_resources_and_runs_outside_the_source_tree(tmp_path):
    """Build the wheel, install it into a fresh venv, run a component from another folder."""
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next(dist.glob("spacy_clinchunk-*.whl"))
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    for lang in ("en", "de", "es", "fr", "nl"):
        assert f"spacy_clinchunk/resources/{lang}/abbreviations.json" in names
    assert "spacy_clinchunk/configs/punct_conj_cleaned.cfg" in names

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    # dependencies come from the project's environment; the package itself only from the wheel
    site = next(env_dir.glob("lib/python*/site-packages"))
    deps = [p for p in sys.path if p.endswith("site-packages")]
    (site / "deps.pth").write_text("\n".join(deps) + "\n")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if install.returncode != 0:  # older pip without --python: install with the venv's own view
        install = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(site), str(wheel)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert install.returncode == 0, install.stderr[-2000:]
    code = textwrap.dedent(
        """
        import spacy, spacy_clinchunk
        assert "site-packages" in spacy_clinchunk.__file__, spacy_clinchunk.__file__
        nlp = spacy.blank("de")
        nlp.add_pipe("sentencizer")
        nlp.add_pipe("clin_punct_splitter")
        doc = nlp("Temp. 38,5 Grad, z.B. Fieber; kein Husten.")
        print("|".join(s.text for s in doc.spans["clin_chunks"]))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([str(python), "-c", code], capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().split("|")[-1] == "kein Husten"
