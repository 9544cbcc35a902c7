"""Types of component settings, and the one line a bad value gets.

Settings have one home: a factory's ``default_config`` holds the defaults, its signature
the types and ranges below. spaCy checks every value against the signature (pydantic, as
for its own components) when a pipeline is built or loaded, also for overrides of a saved
pipeline; :func:`describe_config_error` turns the validation dump into one line. The
``Pipe`` classes take their settings as required keyword arguments: no second set of
defaults, no range table.

Annotations must stay real objects (no ``from __future__ import annotations`` in factory
modules): spaCy reads them from the signature at run time.
"""
from typing import Any, Optional

try:  # spaCy validates with pydantic's v1 API under both pydantic generations
    from pydantic.v1 import confloat, conint
except ImportError:  # pragma: no cover - pydantic 1
    from pydantic import confloat, conint  # type: ignore[no-redef]

# integers are strict (a float or a bool is refused, never truncated); numbers are not
NonNegativeInt = conint(strict=True, ge=0)
PositiveInt = conint(strict=True, ge=1)
Similarity = confloat(ge=-1.0, le=1.0)  # a cosine similarity threshold
Fraction = confloat(ge=0.0, le=1.0)
PositiveFloat = confloat(gt=0.0)


class SettingError(ValueError):
    """Settings that contradict each other (one line naming the component and settings)."""


def describe_config_error(err: Exception) -> Optional[str]:
    """One line for spaCy's ``ConfigValidationError`` (else None): component, setting, why, value.

    Works with both confection generations (spaCy 3.7: ``loc=(setting,)``, ``parent=name``;
    spaCy 3.8: ``loc=[factory, setting]``, no parent).
    """
    errors = getattr(err, "errors", None) or []
    if not errors:
        return None
    config = getattr(err, "config", None)
    config = config if isinstance(config, dict) else {}
    factory = config.get("@factories")
    component = getattr(err, "parent", None) or config.get("name") or factory or "config"
    item = errors[0]
    loc = [str(part) for part in item.get("loc", ())]
    setting = loc[-1] if loc else "?"
    value: Any = config.get(setting)
    got = f", got {value!r}" if value is not None else ""
    return f"{component}: {setting}: {item.get('msg', 'invalid value')}{got}"


# -- TRANSITIONAL: the old range table, until every factory carries its ranges in its signature
from dataclasses import dataclass  # noqa: E402
from typing import Dict, Mapping, Sequence  # noqa: E402


@dataclass(frozen=True)
class Spec:
    kind: str  # "int" | "float" | "bool" | "choice"
    low: Optional[float] = None
    high: Optional[float] = None
    choices: Sequence[str] = ()
    nullable: bool = False

    def allows(self, value: Any) -> bool:
        if value is None:
            return self.nullable
        if self.kind == "choice":
            return value in self.choices
        if self.kind == "bool":
            return isinstance(value, bool)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.kind == "int" and not float(value).is_integer():
            return False
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def describe(self) -> str:
        if self.kind == "choice":
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        elif self.kind == "bool":
            text = "true or false"
        else:
            noun = "an integer" if self.kind == "int" else "a number"
            if self.low is not None and self.high is not None:
                text = f"{noun} from {_num(self.low)} to {_num(self.high)}"
            elif self.low is not None:
                text = f"{noun} >= {_num(self.low)}"
            else:
                text = noun
        return text + (" or null" if self.nullable else "")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


INT0, INT1 = Spec("int", 0), Spec("int", 1)
BOOL = Spec("bool")

SETTINGS: Dict[str, Dict[str, Spec]] = {
    "clin_conj_splitter": {"min_words_before": INT1, "min_words_after": INT1},
    "clin_cleaner": {
        "max_cleanup_passes": INT0,
        "min_cleaned_chunk_length_chars": INT0,
        "filter_short_low_value_chunks_max_words": INT0,
        "strip_list_markers": BOOL,
    },
    "clin_semantic_window": {
        "mode": Spec("choice", choices=("exact", "pooled")),
        "window_size": INT1,
        "step_size": INT1,
        "threshold": Spec("float", -1.0, 1.0),
        "min_segment_words": INT0,
        "split_at": Spec("choice", choices=("drop", "minimum")),
        "negation_merge": BOOL,
        "negation_merge_max_words": INT0,
        "batch_size": INT1,
        "save_model": BOOL,
    },
    "clin_focus": {
        "min_focus_chars": INT1,
        "trim_negation": BOOL,
        "distributive": BOOL,
        "max_conjuncts": INT0,
        "min_conjunct_words": INT1,
        "head_extras": BOOL,
        "segment_min_words": INT0,
        "trim_counts": BOOL,
    },
    "clin_context_assertion": {"max_scope": Spec("int", 1, nullable=True), "include_default_rules": BOOL},
    "clin_llm_context": {
        "chunk_size": INT1,
        "chunk_overlap": INT0,
        "align": Spec("choice", choices=("tokens", "sentences", "clin_chunks")),
        "align_tolerance": INT0,
        "document_chars": Spec("int", 0, nullable=True),
        "oversized_document": Spec("choice", choices=("truncate_middle", "head", "skip")),
        "context_size": INT1,
        "max_concurrency": INT1,
        "max_consecutive_failures": INT0,
        "strict": BOOL,
        "overwrite": BOOL,
    },
}


def check_settings(factory: str, name: str, values: Mapping[str, Any]) -> None:
    """Raise :class:`SettingError` for the first setting of ``values`` outside its range."""
    for key, spec in SETTINGS.get(factory, {}).items():
        if key in values and not spec.allows(values[key]):
            raise SettingError(f"{name}: {key} must be {spec.describe()}, got {values[key]!r}")



