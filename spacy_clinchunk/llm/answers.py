"""The model's answer as a chunk's context: chatter, prefixes and quotes removed, cut to size."""
import re
from typing import Any, Optional

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_CHATTER_LINE = re.compile(
    r"^\s*(?:sure|certainly|of course|okay|ok|here(?:'s| is| are)|below is)\b[^\n]*?[:.!]\s*$", re.IGNORECASE
)
_TRAILING_CHATTER = re.compile(r"^\s*(?:note:|let me know|i hope|feel free|this context)\b", re.IGNORECASE)
_PREFIX = re.compile(r"^\s*(?:\*\*|__)?\s*(?:chunk\s+)?(?:context(?:ual)?(?:\s+summary)?|situating context)\s*(?:\*\*|__)?\s*[:\-–]\s*(?:\*\*|__)?\s*", re.IGNORECASE)
_REFUSAL = re.compile(
    r"^\s*(?:i'?m sorry|i am sorry|sorry,|i cannot|i can'?t|i can not|i am unable|i'?m unable|as an ai|i won'?t)",
    re.IGNORECASE,
)
_QUOTES = "\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb"


def clean_context(text: Optional[str], encoding: Any, context_size: int) -> str:
    """The LLM's answer as context: no "Context:" prefix, quotes or chatter; at most ``context_size`` tokens.

    Returns ``""`` for empty or refused answers (counted as failures by the component).
    """
    if not text:
        return ""
    text = _THINK.sub("", text).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    while lines and _CHATTER_LINE.match(lines[0]) and len(lines) > 1:
        lines.pop(0)
    while len(lines) > 1 and _TRAILING_CHATTER.match(lines[-1]):
        lines.pop()
    text = " ".join(line.strip() for line in lines)
    previous = None
    while previous != text:
        previous = text
        text = _PREFIX.sub("", text).strip().strip(_QUOTES).strip()
        text = text.strip("*_").strip()
    text = re.sub(r"\s+", " ", text)
    if not text or _REFUSAL.match(text):
        return ""
    tokens = encoding.encode_ordinary(text)
    if context_size > 0 and len(tokens) > context_size:
        cut = encoding.decode(tokens[:context_size]).rstrip("\ufffd")
        sentence_end = max(cut.rfind(". "), cut.rfind("; "))
        if sentence_end >= len(cut) // 2:
            cut = cut[: sentence_end + 1]
        elif " " in cut:
            cut = cut[: cut.rfind(" ")]
        text = cut.rstrip(" ,;:-")
        while text and len(encoding.encode_ordinary(text)) > context_size:
            text = text[: text.rfind(" ")] if " " in text else ""
    return text.strip()
