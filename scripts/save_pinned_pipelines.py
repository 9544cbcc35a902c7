"""Save the pipelines that pin "a pipeline saved by 0.2 loads" (tests/pipeline/test_saved_pipelines.py).

    python scripts/save_pinned_pipelines.py

writes tests/data/saved_0_2/<strategy>/ (the saved pipeline) and its expected.json (the
chunks it gives on tests' sentence). Rerun it only when a change of output is intended and
said so in the CHANGELOG: the saved copies are what users' saved pipelines look like.
"""

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "saved_0_2"
PIPELINES = ("retrieval", "llm_context")  # a strategy, and clin_llm_context with the offline context writer
TEXT = "HISTORY:\nSeizures since infancy but no fever. Mother has diabetes; denies chest pain.\n"
HEURISTIC = {"@misc": "spacy_clinchunk.HeuristicContext.v1"}


def spans_of(doc):
    """Every span group of ``doc``: offsets, text and the values our components set."""
    from spacy_clinchunk.export.records import chunk_records

    return {key: [[r["start"], r["end"], r["text"], r["context"]] for r in chunk_records(doc, key)] for key in sorted(doc.spans)}


def build(name: str):
    import spacy

    from spacy_clinchunk import load_pipeline

    if name != "llm_context":
        return load_pipeline(name)
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    windows = {"@misc": "spacy_clinchunk.TokenWindows.v1", "chunk_size": 16, "chunk_overlap": 4}
    nlp.add_pipe("clin_llm_context", config={"model": HEURISTIC, "windows": windows})
    nlp.initialize()
    return nlp


def main() -> None:
    for name in PIPELINES:
        nlp = build(name)
        target = OUT / name
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        nlp.to_disk(target)
        (target / "expected.json").write_text(json.dumps(spans_of(nlp(TEXT)), indent=1) + "\n", encoding="utf-8")
        print(f"saved {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
