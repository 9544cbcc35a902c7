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
