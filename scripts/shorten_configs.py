"""Rewrite strategy configs in their short form, and prove each fills to the same pipeline.

    python scripts/shorten_configs.py configs/*.cfg            # report only
    python scripts/shorten_configs.py configs/*.cfg --write    # rewrite those whose check passes

A short config holds [paths], [nlp] (lang, pipeline and what differs from spaCy's defaults), each
component with its factory and the settings that differ from the factory's ``default_config``,
empty [initialize] sections (so an [initialize.components.X] block can be appended) and the
[corpora] our readers need for ``spacy init fill-config`` / ``spacy debug config``. The check:
the filled [nlp], [components] and [initialize] of the short form equal those of the original.
Written for the 0.2 redesign (issue 41); rerun it on a config that comes in filled (a merge).
"""

import sys
from pathlib import Path

from thinc.api import Config

READER = "spacy_clinchunk.AnnotatedCorpus.v1"
ORDER = ("paths", "nlp", "components", "initialize", "corpora")


def pipeline_of(text: str) -> dict:
    """What a pipeline runs: the filled [nlp], [components] and [initialize] of a config."""
    from spacy.util import load_model_from_config

    nlp = load_model_from_config(Config().from_str(text, interpolate=False), auto_fill=True, validate=True)
    full = nlp.config
    return {"nlp": full["nlp"], "components": full["components"], "initialize": full["initialize"]}


def without_defaults(section: dict, defaults: dict) -> dict:
    """``section`` less the settings equal to ``defaults`` (a registered block: compared filled)."""
    from spacy.util import registry

    kept = {}
    for key, value in section.items():
        default = defaults.get(key)
        if key == "factory" or key.startswith("@") or key not in defaults:
            kept[key] = value
        elif isinstance(value, dict) and isinstance(default, dict) and any(k.startswith("@") for k in value):
            filled, filled_default = registry.fill({"x": value})["x"], registry.fill({"x": default})["x"]
            if filled == filled_default:
                continue
            same_function = all(value.get(k) == default.get(k) for k in value if k.startswith("@"))
            kept[key] = without_defaults(value, filled_default) if same_function else value
        elif value != default:
            kept[key] = value
    return kept


def short_form(text: str) -> str:
    import spacy

    lines = text.splitlines()
    header = lines[: next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))]
    config = Config().from_str(text, interpolate=False)
    blank = spacy.blank(config["nlp"]["lang"])
    new = {
        "paths": {"train": ".", "dev": "."},
        "nlp": {k: v for k, v in config["nlp"].items() if k in ("lang", "pipeline") or blank.config["nlp"].get(k) != v},
        "components": {},
        "initialize": {"components": config.get("initialize", {}).get("components", {})},
        "corpora": {part: {"@readers": READER, "path": "${paths.%s}" % part} for part in ("train", "dev")},
    }
    for name, section in config["components"].items():
        factory = section.get("factory")
        defaults = blank.get_factory_meta(factory).default_config if factory and blank.has_factory(factory) else {}
        new["components"][name] = without_defaults(section, defaults or {})
    parts = []
    for top in ORDER:
        if top == "components":
            parts.append("[components]")
            for name in new["nlp"]["pipeline"]:
                parts.append(Config({"components": {name: new["components"][name]}}).to_str(interpolate=False).split("\n", 2)[2])
        elif top == "initialize" and not new["initialize"]["components"]:
            parts.append("[initialize]\n\n[initialize.components]")
        else:
            parts.append(Config({top: new[top]}).to_str(interpolate=False))
    return "\n".join(header) + ("\n" if header else "") + "\n\n".join(p.strip() for p in parts) + "\n"


def main(paths, write: bool) -> int:
    failed = 0
    for path in map(Path, paths):
        text = path.read_text(encoding="utf-8")
        try:
            short = short_form(text)
            same = pipeline_of(short) == pipeline_of(text)
        except Exception as err:  # a config whose factories are not installed here (transformer)
            print(f"{path}: skipped ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})")
            continue
        print(f"{path}: {len(text.splitlines())} -> {len(short.splitlines())} lines, same pipeline: {same}")
        failed += not same
        if same and write:
            path.write_text(short, encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main([a for a in sys.argv[1:] if a != "--write"], "--write" in sys.argv))
