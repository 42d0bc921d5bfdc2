"""Integrity errors by constraint name (DESIGN §7.7): a unique violation is ALREADY_EXISTS, a foreign-key
violation NOT_FOUND, each with the message its domain registered for the constraint (a foreign key names the
kind of record it refers to, and answers with that kind's text from `kit.errors.NOT_FOUND_MESSAGES`).

Writes rely on the database instead of checking first: a check is only a snapshot, and a row inserted or a
parent deleted between the check and the write (by a concurrent request) still fails here, as a clean answer
rather than a 500.
"""

import logging
from contextlib import contextmanager
from typing import Iterator

from psycopg.errors import ForeignKeyViolation, IntegrityError, UniqueViolation

from collab.kit.errors import ApiError, not_found_message

log = logging.getLogger("collab.db")
# A violation of a constraint no domain registered still answers by its kind, with these words.
DEFAULTS = {
    UniqueViolation: ("ALREADY_EXISTS", "The record already exists."),
    ForeignKeyViolation: ("NOT_FOUND", not_found_message("record"))
}
_MEANINGS: dict[str, tuple[str, str]] = {}


def register(constraint: str, *, message: str, code: str | None = None) -> None:
    """Say what a violation of `constraint` means to a caller; the code defaults to the violation's kind."""
    _MEANINGS[constraint] = (code or "", message)


def register_missing(constraint: str, kind: str, variant: str | None = None) -> None:
    """Say that a violation of the foreign key `constraint` means a record of `kind` does not exist: NOT_FOUND
    in the one not-found table's words (`kit.errors.not_found_message`)."""
    register(constraint, code="NOT_FOUND", message=not_found_message(kind, variant))


def to_api_error(exc: IntegrityError, **messages: str) -> ApiError | None:
    """The ApiError a unique or foreign-key violation answers with; None for any other integrity error.

    `messages` (by code, e.g. ALREADY_EXISTS="...") override the registered words where the caller knows
    better which record it meant (a job's reason names the ids).
    """
    kind = next((k for k in DEFAULTS if isinstance(exc, k)), None)
    if kind is None:
        return None
    default_code, default_message = DEFAULTS[kind]
    name = exc.diag.constraint_name or ""
    code, message = _MEANINGS.get(name, ("", ""))
    if not message:
        log.warning("integrity error on a constraint with no registered meaning: %s", name or "(unnamed)")
    code = code or default_code
    return ApiError(code, messages.get(code) or message or default_message)


@contextmanager
def mapped(**messages: str) -> Iterator[None]:
    """Raise a unique or foreign-key violation inside the block as its ApiError (see `to_api_error`)."""
    try:
        yield
    except IntegrityError as exc:
        error = to_api_error(exc, **messages)
        if error is None:
            raise
        raise error from None
