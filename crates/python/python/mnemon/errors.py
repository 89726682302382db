"""The exceptions mnemon raises: one base class, :class:`Error`, and one subclass per stable
error code of mnemon's operation layer (the same codes the CLI, MCP and the HTTP server use).

Every exception has ``.code``, the code as a string (``"not_found"``...). Input errors are also
``ValueError``, missing records also ``LookupError``, refusals also ``PermissionError``, so code
that catches the built-in classes keeps working.
"""

from __future__ import annotations

__all__ = [
    "Error",
    "InvalidInput",
    "NotFound",
    "Forbidden",
    "Conflict",
    "Damaged",
    "Unavailable",
]


class Error(Exception):
    """Any error of mnemon. ``code`` is the operation layer's stable code."""

    code: str = "error"


class InvalidInput(Error, ValueError):
    """The request was malformed: an unknown kind, a bad time, a naive datetime, a bad id."""

    code = "invalid_input"


class NotFound(Error, LookupError):
    """No such record (or no record with those digits)."""

    code = "not_found"


class Forbidden(Error, PermissionError):
    """A namespace out of reach (of a server's token), or a write to a read-only handle."""

    code = "forbidden"


class Conflict(Error):
    """The record's state does not allow it: already superseded or ended, a live record with
    the same identity, a domain rule (a finished task, a dependency cycle)."""

    code = "conflict"


class Damaged(Error):
    """The file is damaged: a value that does not decode, indexes that disagree."""

    code = "damaged"


class Unavailable(Error):
    """The file or a service could not be used: I/O errors, a full disk, a file in use, an
    embedder or a server that did not answer, a closed handle."""

    code = "unavailable"
