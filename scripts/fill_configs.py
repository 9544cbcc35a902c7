"""Fill every shipped config with spaCy's defaults so ``spacy debug config`` accepts it.

    python scripts/fill_configs.py            # rewrite configs/*.cfg in place
    python scripts/fill_configs.py --check    # exit 1 if a config is not filled

Like ``spacy init fill-config``, plus what our pipelines need to pass spaCy's own checks:
the leading comment block is kept, and the corpora read annotated documents with our
reader (``--paths.train`` / ``--paths.dev`` name a folder; the chunkers need no training).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = ROOT / "configs"
READER = "spacy_clinchunk.AnnotatedCorpus.v1"


def filled(path: Path) -> str:
    from spacy.cli.init_config import fill_config
    from thinc.api import Config

    header = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    config = Config().from_disk(path, interpolate=False)
    config["paths"] = {**config.get("paths", {}), "train": ".", "dev": "."}
    config["corpora"] = {
        "train": {"@readers": READER, "path": "${paths.train}"},
        "dev": {"@readers": READER, "path": "${paths.dev}"},
    }
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base.cfg"
        out = Path(tmp) / "filled.cfg"
        config.to_disk(base, interpolate=False)
        fill_config(out, base, silent=True)
        body = out.read_text(encoding="utf-8")
    return "\n".join(header + [body.rstrip()]) + "\n"


def same_settings(text: str, path: Path) -> bool:
    """Whether ``text`` and the config at ``path`` hold the same settings. Compared parsed, not
    as text: spaCy 3.7 and 3.8 (confection) write the same config with different spacing."""
    from thinc.api import Config

    return Config().from_str(text, interpolate=False) == Config().from_disk(path, interpolate=False)


def missing_package(path: Path) -> Optional[str]:
    """An optional package the config's registered functions come from, when not installed."""
    import importlib.util

    if "spacy-transformers." in path.read_text(encoding="utf-8") and importlib.util.find_spec("spacy_transformers") is None:
        return "spacy-transformers (spacy-clinchunk[transformers])"
    return None


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report configs that are not filled; change nothing")
    args = parser.parse_args(argv)
    stale = []
    for path in sorted(CONFIG_DIR.glob("*.cfg")):
        missing = missing_package(path)
        if missing:
            print(f"skipped {path.name}: needs {missing} (fill it where that is installed)", file=sys.stderr)
            continue
        text = filled(path)
        if not same_settings(text, path):
            stale.append(path.name)
            if not args.check:
                path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print(f"not filled: {', '.join(stale)} (run python scripts/fill_configs.py)", file=sys.stderr)
        return 1
    print(f"{'checked' if args.check else 'filled'} {len(list(CONFIG_DIR.glob('*.cfg')))} configs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
