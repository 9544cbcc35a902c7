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
import inspect
from typing import Any, Literal, Optional, Union, get_args, get_origin

try:  # spaCy validates with pydantic's v1 API under both pydantic generations
    from pydantic.v1 import StrictBool, confloat, conint
except ImportError:  # pragma: no cover - pydantic 1
    from pydantic import StrictBool, confloat, conint  # type: ignore[no-redef]

# integers are strict (a float or a bool is refused, never truncated); numbers are not
NonNegativeInt = conint(strict=True, ge=0)
PositiveInt = conint(strict=True, ge=1)
Similarity = confloat(ge=-1.0, le=1.0)  # a cosine similarity threshold
Fraction = confloat(ge=0.0, le=1.0)
PositiveFloat = confloat(gt=0.0)


class SettingError(ValueError):
    """Settings that contradict each other (one line naming the component and settings)."""


def describe_config_error(err: Exception) -> Optional[str]:
    """One line for spaCy's ``ConfigValidationError`` (else None): component, setting, rule, value.

    The rule is read from the factory's signature (the types above), so the line is the same
    whichever validator spaCy runs (pydantic under spaCy 3.7, confection's own under 3.8, whose
    messages name type classes); the validator's message is the fallback.
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
    got = f", got {value!r}" if setting in config else ""
    rule = _rule(_annotation(factory, setting))
    if rule is None:
        msg = str(item.get("msg", "invalid value"))
        return f"{component}: {setting}: {msg.removeprefix('at root: ')}{got}"
    return f"{component}: {setting} must be {rule}{got}"


def _annotation(factory: Optional[str], setting: str) -> Any:
    if not factory:
        return None
    from spacy.util import registry

    try:
        func = registry.factories.get(factory)
    except Exception:  # not a registered factory (e.g. a registered function's block)
        return None
    parameter = inspect.signature(func).parameters.get(setting)
    return None if parameter is None else parameter.annotation


def _rule(annotation: Any) -> Optional[str]:
    """What a setting of this type allows, in words (None when we cannot say)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is Union and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        rule = _rule(inner[0]) if len(inner) == 1 else None
        return None if rule is None else rule + " or null"
    if not isinstance(annotation, type):
        return None
    if issubclass(annotation, bool) or annotation is StrictBool:  # pydantic's StrictBool is an int subclass
        return "true or false"
    if issubclass(annotation, int):
        return "an integer" + _bounds(annotation)
    if issubclass(annotation, float):
        return "a number" + _bounds(annotation)
    if issubclass(annotation, str):
        regex = getattr(annotation, "regex", None)
        return "a string" + (f" matching {regex.pattern}" if regex is not None else "")
    return None


def _bounds(annotation: type) -> str:
    low = getattr(annotation, "ge", None)
    high = getattr(annotation, "le", None)
    above = getattr(annotation, "gt", None)
    if low is not None and high is not None:
        return f" from {_num(low)} to {_num(high)}"
    if low is not None:
        return f" >= {_num(low)}"
    if above is not None:
        return f" > {_num(above)}"
    if high is not None:
        return f" <= {_num(high)}"
    return ""


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)
