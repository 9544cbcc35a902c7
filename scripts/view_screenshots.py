"""Render the view of the bundled example note and take the screenshots in docs/img/.

    python scripts/view_screenshots.py [--chromium /usr/bin/chromium]

``view.png``: the ``assertion`` strategy, a negated chunk selected (its details in the side
panel). ``view-focus.png``: the ``retrieval`` strategy's focus spans inside their chunks,
a chunk in keyboard focus. Pages are titled with the note's file name only, so no
screenshot shows a folder of the machine it was taken on. Needs Playwright and a Chromium
(Debian: ``apt-get install chromium``); nothing is fetched from the network.
"""
import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTE = ROOT / "resources" / "examples" / "discharge_summary_en.txt"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def page_of(strategy: str, spans_key: str = None) -> str:
    from spacy_clinchunk.attrs import register_extensions
    from spacy_clinchunk.export.view import render_html
    from spacy_clinchunk.pipeline import load_pipeline

    nlp = load_pipeline(strategy)
    register_extensions()
    doc = nlp.make_doc(NOTE.read_text(encoding="utf-8"))
    doc._.clin_doc_id, doc._.clin_source = NOTE.stem, NOTE.name
    doc = nlp(doc)
    return render_html(doc, spans_key or _chunks_key(nlp), title=NOTE.name)


def _chunks_key(nlp) -> str:
    from spacy_clinchunk.pipeline import span_keys_of

    return span_keys_of(nlp)[1]


def shoot(chromium: str, out_dir: Path) -> None:
    from playwright.sync_api import sync_playwright

    shots = {
        "view.png": (page_of("assertion"), lambda page: page.locator('.chunk[data-assertion="negated"]').nth(1).click()),
        "view-focus.png": (page_of("retrieval"), lambda page: page.locator(".chunk:has(mark.focus)").nth(3).focus()),
    }
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=chromium, headless=True, args=FLAGS, viewport={"width": 1400, "height": 900}
        )
        try:
            for name, (html, act) in shots.items():
                page = context.new_page()
                page.set_content(html)
                act(page)
                page.screenshot(path=str(out_dir / name))
                page.close()
                print(f"wrote {out_dir / name}", file=sys.stderr)
        finally:
            context.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
    parser.add_argument("--out", default=str(ROOT / "docs" / "img"))
    args = parser.parse_args()
    if not args.chromium:
        print("error: no chromium found (apt-get install chromium, or give --chromium PATH)", file=sys.stderr)
        return 2
    shoot(args.chromium, Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
