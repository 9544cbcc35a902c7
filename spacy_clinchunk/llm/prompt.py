"""The prompt of ``clin_llm_context``: a template with ``{placeholders}``, and its version.

The template is data: the component gets it through ``initialize(prompt=...)`` (the
packaged ``resources/prompts/context_v1.txt`` when nothing is given) and carries it in
``to_disk``. Its version (a digest of the text) is part of every cache key, so a changed
template never reuses answers written for another.
"""
import hashlib
import re
import warnings
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Optional

from spacy.util import registry

PACKAGED = "context_v1.txt"
VERSION_PREFIX = "context_v1"
PLACEHOLDERS = re.compile(r"\{(document_type|document|chunk|context_size)\}")


class PromptTemplate:
    """A checked template: it has ``{chunk}``, and ``{document}`` (if any) comes first."""

    def __init__(self, text: str, owner: str = "clin_llm_context") -> None:
        if not isinstance(text, str) or "{chunk}" not in text:
            raise ValueError(f"{owner}: the prompt template has no {{chunk}} placeholder")
        if "{document}" in text and text.index("{document}") > text.index("{chunk}"):
            warnings.warn(
                f"{owner}: the prompt template puts {{chunk}} before {{document}}; servers cannot reuse "
                "the note's cached prefix across its chunks",
                UserWarning,
            )
        self.text = text
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
        self.version = f"{VERSION_PREFIX}:{digest}"

    def render(self, *, document: str, chunk: str, document_type: str, context_size: int) -> str:
        values = {"document_type": document_type, "document": document, "chunk": chunk, "context_size": str(context_size)}
        return PLACEHOLDERS.sub(lambda m: values[m.group(1)], self.text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PromptTemplate) and other.text == self.text

    def __repr__(self) -> str:
        return f"PromptTemplate({self.version!r})"


def packaged_prompt() -> str:
    """The text of the template that ships with the package."""
    folder = importlib_resources.files("spacy_clinchunk.resources").joinpath("prompts")
    return folder.joinpath(PACKAGED).read_text(encoding="utf-8")


def read_prompt(path: Optional[str], owner: str = "clin_llm_context") -> str:
    """The template in the file ``path`` (UTF-8), or the packaged one when ``path`` is None."""
    if path is None:
        return packaged_prompt()
    file = Path(path).expanduser()
    if not file.is_file():
        raise ValueError(f"{owner}: prompt template not found: {path}")
    return file.read_text(encoding="utf-8")


@registry.misc("spacy_clinchunk.PromptTemplate.v1")
def prompt_template_v1(path: Optional[str] = None) -> str:
    """A prompt template's text for ``[initialize.components.clin_llm_context] prompt``;
    the packaged one when ``path`` is null."""
    return read_prompt(path)
