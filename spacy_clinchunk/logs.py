"""One place that keeps third-party log output off our users' stderr.

PyRuSH (inside medspaCy) logs DEBUG lines through loguru on every sentence. Components
that load medspaCy call :func:`quiet_medspacy_loguru`, which disables loguru for those
two packages only (``disable`` is per package: other loguru users keep their
configuration). The levels of standard-library loggers (transformers, Ray, urllib3 are
chatty at INFO) belong to the application: only our CLI raises them, through
:func:`quiet_third_party_logging`; library code never touches them.
"""
import logging
from contextlib import contextmanager
from typing import Iterator

LOGURU_PACKAGES = ("PyRuSH", "medspacy")
STDLIB_LOGGERS = ("PyRuSH", "medspacy", "transformers", "sentence_transformers", "urllib3", "ray")


def quiet_medspacy_loguru() -> None:
    """No loguru DEBUG flood from PyRuSH / medspaCy (those packages only; idempotent)."""
    try:
        from loguru import logger as loguru_logger  # type: ignore
    except ImportError:  # loguru comes with medspaCy; without it there is nothing to quiet
        return
    for package in LOGURU_PACKAGES:
        loguru_logger.disable(package)


def quiet_third_party_logging() -> None:
    """The CLI's quiet console: medspaCy's loguru off, chatty stdlib loggers at WARNING."""
    quiet_medspacy_loguru()
    for name in STDLIB_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


@contextmanager
def transformers_progress_off() -> Iterator[None]:
    """No transformers progress bar while loading a model (transformers 5 draws a "Loading
    weights" bar on stderr for every load); the user's setting is restored afterwards."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()
