"""One place that keeps third-party log output off our users' stderr.

PyRuSH (inside medspaCy) logs DEBUG lines through loguru, and transformers, Ray and
urllib3 are chatty at INFO. We disable loguru for those packages only (``disable``
is per package, so other loguru users keep their configuration) and raise the
standard-library loggers to WARNING.
"""
import logging
from contextlib import contextmanager
from typing import Iterator

LOGURU_PACKAGES = ("PyRuSH", "medspacy")
STDLIB_LOGGERS = ("PyRuSH", "medspacy", "transformers", "sentence_transformers", "urllib3", "ray")


def quiet_third_party_logging() -> None:
    """Silence the DEBUG/INFO chatter of the libraries we drive (idempotent)."""
    try:
        from loguru import logger as loguru_logger  # type: ignore
    except ImportError:  # loguru comes with medspaCy; without it there is nothing to quiet
        pass
    else:
        for package in LOGURU_PACKAGES:
            loguru_logger.disable(package)
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
