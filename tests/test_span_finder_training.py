"""configs/training/span_finder.cfg trains with `python -m spacy train` from annotated documents."""
import subprocess
import sys

import pytest
import spacy

from conftest import CONFIG_DIR, GSC_DIR, requires_shared_data


@pytest.mark.slow
@requires_shared_data()
def test_span_finder_config_trains_and_predicts_exact_spans(tmp_path):
    files = sorted(GSC_DIR.glob("*.json"))[:6]
    for name, part in (("train", files[:4]), ("dev", files[4:])):
        (tmp_path / name).mkdir()
        for file in part:
            (tmp_path / name / file.name).symlink_to(file.resolve())
    subprocess.run(
        [sys.executable, "-m", "spacy", "train", str(CONFIG_DIR / "training" / "span_finder.cfg"), "--output", str(tmp_path / "out"),
         "--paths.train", str(tmp_path / "train"), "--paths.dev", str(tmp_path / "dev"), "--training.max_epochs", "2"],
        check=True, capture_output=True,
    )
    nlp = spacy.load(tmp_path / "out" / "model-last")
    doc = nlp("A syndrome of brachydactyly, aplastic or hypoplastic nails and craniosynostosis.")
    for span in doc.spans.get("annotations", []):
        assert span.text == doc.text[span.start_char:span.end_char]
