"""Errors of the services: bad input naming its field (the API answers 400 or 413)."""

from __future__ import annotations


class ServiceError(Exception):
    """Bad input for a service: names the offending field (API: 400 ``{field: [message]}``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class ImportRejected(ServiceError):
    """An import refused by the importers; ``field`` is the location (line, key or file)."""


class UploadTooLarge(ServiceError):
    """An upload above ``DASHBOARD_MAX_UPLOAD_BYTES`` (API: 413)."""


class OverLimit(ServiceError):
    """An input above a limit other than the upload size: queues in a snapshot, bytes of a
    config (API: 413 naming the limit and its setting)."""

    def __init__(self, field: str, message: str, limit: int, setting: str) -> None:
        super().__init__(field, message)
        self.limit = limit
        self.setting = setting


class IdempotencyConflict(ServiceError):
    """An idempotency key already used by a run of a different request (API: 409)."""
