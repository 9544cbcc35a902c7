"""Render the view of the bundled example note and take the screenshots in docs/img/.

    python scripts/view_screenshots.py [--chromium /usr/bin/chromium]

``view.png``: the ``assertion`` strategy, a negated chunk selected (its details in the side
panel). ``view-focus.png``: the ``retrieval`` strategy's focus spans inside their chunks,
a chunk in keyboard focus. ``view-context.png``: the ``contextual_rag`` strategy's
retrieval windows, the first selected with its LLM context in the side panel; the context comes
from the tests' loopback server (``tests/llm_server.py``: it names each window's first
words), so no model is needed and nothing leaves 127.0.0.1. Pages are titled with the note's file name only, so no
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


def page_of(strategy: str, spans_key: str = None, overrides: dict = None) -> str:
    from spacy_clinchunk.attrs import register_extensions
    from spacy_clinchunk.export.view import render_html
    from spacy_clinchunk.pipeline import load_pipeline

    nlp = load_pipeline(strategy, overrides)
    register_extensions()
    doc = nlp.make_doc(NOTE.read_text(encoding="utf-8"))
    doc._.clin_doc_id, doc._.clin_source = NOTE.stem, NOTE.name
    doc = nlp(doc)
    return render_html(doc, spans_key or _chunks_key(nlp), title=NOTE.name)


def _chunks_key(nlp) -> str:
    from spacy_clinchunk.pipeline import span_keys_of

    return span_keys_of(nlp)[1]


def context_page() -> str:
    """The ``contextual_rag`` page, its contexts written by the loopback test server."""
    sys.path.insert(0, str(ROOT / "tests"))
    from llm_server import FakeLLMServer

    server = FakeLLMServer().start()
    try:
        return page_of("contextual_rag", overrides={"components.clin_llm_context.model.base_url": server.url})
    finally:
        server.stop()


def select_first_window(page) -> None:
    """Keyboard selection (focus, Enter), as a reader without a mouse would; then back to
    the top of the page, where the legend and the panel's heading are."""
    page.locator(".chunk").first.focus()
    page.keyboard.press("Enter")
    page.evaluate("window.scrollTo(0, 0)")


def shoot(chromium: str, out_dir: Path) -> None:
    from playwright.sync_api import sync_playwright

    shots = {
        "view.png": (page_of("assertion"), lambda page: page.locator('.chunk[data-assertion="negated"]').nth(1).click()),
        "view-focus.png": (page_of("retrieval"), lambda page: page.locator(".chunk:has(mark.focus)").nth(3).focus()),
        "view-context.png": (context_page(), select_first_window),
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
