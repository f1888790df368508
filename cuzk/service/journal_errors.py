"""The job journal's errors (cuzk.service.journal re-exports them); DamagedJobError is in journal_rows."""
from __future__ import annotations

from cuzk.errors import CuzkError


class JournalError(CuzkError):
    """The journal cannot be opened or used (not a SQLite database, a newer schema, an I/O error, a
    closed journal), or a job state change that is not allowed."""


class DuplicateRequestError(JournalError):
    """A request_id submitted again with a different kind or payload: it names another job's request."""

    def __init__(self, request_id: str, what: str) -> None:
        self.request_id = request_id
        super().__init__(f"request_id {request_id!r} is already a job with a different {what}")


class UnknownJobError(JournalError):
    """No job with this request_id (never submitted, or expired)."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        super().__init__(f"no job with request_id {request_id!r}")


class TransitionError(JournalError):
    """A state change the job's current state does not allow (e.g. finishing a cancelled job), or a
    second, different answer for an answered job."""

    def __init__(self, request_id: str, reason: str) -> None:
        self.request_id, self.reason = request_id, reason
        super().__init__(f"job {request_id!r}: {reason}")
