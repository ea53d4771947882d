"""Errors a user can cause. The CLI turns each into one clear message and a non-zero exit."""


class UserError(Exception):
    """A problem the user can fix (bad flag, file, spec, endpoint); the message says how."""


class BackendError(Exception):
    """A request failed. ``retryable`` says whether trying again may help; ``unavailable`` that the
    server itself failed (no connection, a timeout, a 5xx), so another replica of the model may answer
    (`models.pool` puts such a replica aside); ``status`` the HTTP status that said so, where one did
    (a Batch API 404 means the batch is gone)."""

    def __init__(self, message: str, *, retryable: bool = True, retry_after: float | None = None,
                 rate_limited: bool = False, unavailable: bool = False, status: int | None = None):
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.rate_limited = rate_limited
        self.unavailable = unavailable
