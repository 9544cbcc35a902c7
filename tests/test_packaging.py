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
    for registry_name in ("misc", "scorers", "readers", "architectures", "tokenizers"):
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
    """Build the wheel, install it into a fresh venv, run a component from another folder.
    It builds from a copy of the tree: a build writes its egg-info and build/ folder where it
    builds, and another test process (.ci/run runs two) reads the tree's entry points meanwhile."""
    dist = tmp_path / "dist"
    source = tmp_path / "source"
    subprocess.run([str(ROOT / "scripts" / "copy-tree"), str(source)], check=True, timeout=120)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(source)],
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
    assert {"spacy_clinchunk/export/view_static/view.js", "spacy_clinchunk/export/view_static/view.css"} <= set(names)
    # the trained span_finder strategy: every file of the saved pipeline directory
    model_dir = ROOT / "spacy_clinchunk" / "models" / "span_finder"
    shipped = sorted(p.relative_to(ROOT).as_posix() for p in model_dir.rglob("*") if p.is_file())
    assert "spacy_clinchunk/models/span_finder/span_finder/model" in shipped
    assert [n for n in shipped if n not in names] == []

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
        from spacy_clinchunk.pipeline import load_pipeline, strategy_config
        assert "site-packages" in str(strategy_config("span_finder"))
        trained = load_pipeline("span_finder")("Brachydactyly and craniosynostosis.")
        assert list(trained.spans["clin_trained"]), "the shipped span_finder predicts nothing"
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([str(python), "-c", code], capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().split("|")[-1] == "kein Husten"


@pytest.mark.matrix
def test_saved_pipeline_meta_names_the_extras_its_components_need(tmp_path):
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("clin_punct_splitter")
    nlp.add_pipe("clin_context_assertion", config={"include_default_rules": False})
    nlp.add_pipe("clin_llm_context", config={"model": {"@misc": "spacy_clinchunk.HeuristicContext.v1"}})
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")  # the factories run again: still one entry
    ours = [r for r in loaded.meta["requirements"] if r.startswith("spacy-clinchunk")]
    assert len(ours) == 1 and ours[0].startswith("spacy-clinchunk[context,llm]>=")


@pytest.mark.slow
def test_spacy_package_lists_the_context_extra(tmp_path):
    import json

    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_punct_splitter")
    nlp.add_pipe("clin_context_assertion", config={"include_default_rules": False})
    nlp.to_disk(tmp_path / "p")
    out = tmp_path / "pkg"
    out.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "spacy", "package", str(tmp_path / "p"), str(out), "--name", "notes", "--version", "0.0.1",
         "--build", "none"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    meta = json.loads(next(out.rglob("meta.json")).read_text())
    assert any(r.startswith("spacy-clinchunk[context]") for r in meta["requirements"])


@pytest.mark.matrix
@pytest.mark.parametrize("config", sorted((ROOT / "configs").glob("*.cfg")), ids=lambda p: p.stem)
def test_spacy_debug_config_accepts_every_shipped_config(config, tmp_path):
    """A shipped config holds what differs from the defaults; spaCy's `init fill-config` gives the
    full form, which spaCy's own `debug config` accepts."""
    import importlib.util

    from spacy.cli.debug_config import debug_config
    from spacy.cli.init_config import fill_config

    if "spacy-transformers." in config.read_text(encoding="utf-8") and importlib.util.find_spec("spacy_transformers") is None:
        pytest.skip("needs spacy-clinchunk[transformers] (its own venv: make test-transformers)")

    full = tmp_path / config.name
    fill_config(full, config, silent=True)
    debug_config(full)  # spaCy's own `python -m spacy debug config`; exits on an invalid config


@pytest.mark.slow
def test_spacy_debug_config_cli_on_a_shipped_config(tmp_path):
    full = tmp_path / "assertion.cfg"
    filled = subprocess.run([sys.executable, "-m", "spacy", "init", "fill-config", str(ROOT / "configs" / "assertion.cfg"), str(full)],
                            capture_output=True, text=True, timeout=300)
    assert filled.returncode == 0, filled.stderr[-2000:]
    result = subprocess.run([sys.executable, "-m", "spacy", "debug", "config", str(full)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "Config is valid" in result.stdout, result.stdout[-2000:] + result.stderr[-2000:]


@pytest.mark.matrix
def test_version_flag(capsys):
    from spacy_clinchunk import __version__
    from spacy_clinchunk.cli import main

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"spacy-clinchunk {__version__}"


def test_cli_leaves_the_users_loguru_sinks_alone(tmp_path, capsys):
    loguru = pytest.importorskip("loguru")
    from spacy_clinchunk.cli import main

    seen = []
    sink = loguru.logger.add(seen.append, level="DEBUG", format="{message}")
    try:
        note = tmp_path / "n.txt"
        note.write_text("fever and cough", encoding="utf-8")
        assert main(["chunk", str(note), "--strategy", "simple"]) == 0
        loguru.logger.debug("the user's own debug line")
        assert [str(m).strip() for m in seen] == ["the user's own debug line"]
    finally:
        loguru.logger.remove(sink)


def _pins(version, prefix=""):
    path = ROOT / "constraints" / f"{prefix}py{version}.txt"
    lines = [l.strip() for l in path.read_text(encoding="utf-8").splitlines() if "==" in l and not l.startswith("#")]
    return {name.lower().replace("_", "-"): pin for name, pin in (l.split("==", 1) for l in lines)}


@pytest.mark.matrix
@pytest.mark.parametrize("version, spacy_minor, numpy_major", [("3.11", "3.7.", "1."), ("3.12", "3.8.", "2."), ("3.13", "3.8.", "2.")])
def test_constraints_per_interpreter_follow_the_matrix(version, spacy_minor, numpy_major):
    pins = _pins(version)
    assert pins["spacy"].startswith(spacy_minor) and pins["numpy"].startswith(numpy_major)
    assert pins["torch"] == "2.13.0" and pins["medspacy"] == "1.3.1"


@pytest.mark.matrix
def test_constraints_of_this_interpreter_cover_every_extra():
    """A new extra in setup.cfg needs `python scripts/lock_constraints.py` (all interpreters)."""
    from packaging.requirements import Requirement

    version = "%d.%d" % sys.version_info[:2]
    pins = _pins(version)
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    missing = []
    for extra, body in parser["options.extras_require"].items():
        for line in body.strip().splitlines():
            if not line.strip() or line.strip().startswith(("%(", "#")):
                continue
            req = Requirement(line.strip())
            own_set = ROOT / "constraints" / f"{extra}-py{version}.txt"  # an extra locked on its own
            here = _pins(version, f"{extra}-") if own_set.is_file() else pins
            if req.marker is None or req.marker.evaluate():
                if req.name.lower().replace("_", "-") not in here:
                    missing.append(f"{extra}:{req.name}")
    assert not missing, f"not in constraints/py{version}.txt: {missing}; run python scripts/lock_constraints.py"


@pytest.mark.matrix
def test_find_python_finds_this_interpreter_family():
    out = subprocess.run([str(ROOT / "scripts" / "find-python"), "python3"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip()
    missing = subprocess.run([str(ROOT / "scripts" / "find-python"), "python2.1"], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1 and not missing.stdout.strip()


def test_only_the_cli_sets_other_libraries_log_levels():
    """Library code leaves log levels to the application: setLevel and Ray's logging_level
    appear in our CLI (through logs.quiet_third_party_logging) and nowhere else."""
    import re

    package = ROOT / "spacy_clinchunk"
    allowed = {package / "logs.py", *(package / "cli").glob("*.py")}
    pattern = re.compile(r"\.setLevel\(|logging_level\s*=\s*logging\.|[\"']logging_level[\"']\s*:\s*logging\.")
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted(package.rglob("*.py"))
        if path not in allowed
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []
