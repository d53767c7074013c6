"""Two kinds of storage failure, so a stage knows whether a retry can help.

``TransientError`` (I/O hiccup, S3 throttling or 5xx, network): retrying the same call
later may succeed, and because parts are deterministic and published atomically a
retry never duplicates rows. ``TerminalError`` (corrupted data, a part that a finished
run already compacted, a missing blob): retrying cannot help. Invalid rows and names
raise ``TypeError``/``ValueError`` like any other bad argument.

``is_transient`` is the single classifier; tasks pass it (wrapped) as Prefect's
``retry_condition_fn`` so only transient failures are retried.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager

import botocore.exceptions
import pyarrow as pa

_TRANSIENT_ERRNOS = frozenset(
    {
        errno.EIO,
        errno.EAGAIN,
        errno.EBUSY,
        errno.EINTR,
        errno.ETIMEDOUT,
        errno.ECONNRESET,
        errno.ECONNREFUSED,
        errno.ECONNABORTED,
        errno.ENETDOWN,
        errno.ENETUNREACH,
        errno.EHOSTUNREACH,
        errno.EPIPE,
    }
)

_TERMINAL_OS_ERRORS = (
    FileNotFoundError,
    FileExistsError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
)

_THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "SlowDown",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "RequestThrottled",
        "RequestTimeout",
        "RequestTimeoutException",
        "InternalError",
        "ServiceUnavailable",
        "ProvisionedThroughputExceededException",
    }
)

# pyarrow's S3 filesystem reports AWS SDK errors as a bare OSError (errno None) whose
# message carries the SDK error name; these names mean "try again later".
_TRANSIENT_MESSAGE_MARKERS = (
    "NETWORK_CONNECTION",
    "SLOW_DOWN",
    "THROTTLING",
    "SERVICE_UNAVAILABLE",
    "INTERNAL_FAILURE",
    "REQUEST_TIMEOUT",
    "REQUEST_TIME_TOO_SKEWED",
    "HTTP response code 5",
    "curlCode: 28",
    "Connection reset",
    "Connection refused",
    "timed out",
)


class StorageError(Exception):
    """Base of the two storage failure kinds."""


class TransientError(StorageError):
    """A failure that a later retry of the same call may not hit (I/O, S3, network)."""


class TerminalError(StorageError):
    """A failure that no retry can fix (corrupted data, an immutable part, a missing blob)."""


def is_transient(exc: BaseException) -> bool:
    """True when retrying the failed call may succeed.

    Classifies our own errors, botocore errors (connection failures, timeouts,
    throttling, HTTP 5xx/429) and OS errors (network errnos, pyarrow S3 messages).
    Everything else (bad input, missing files, permissions, corrupted data) is not.
    """
    if isinstance(exc, TransientError):
        return True
    if isinstance(exc, TerminalError):
        return False
    if isinstance(exc, botocore.exceptions.ClientError):
        return _client_error_is_transient(exc)
    if isinstance(exc, (botocore.exceptions.ConnectionError, botocore.exceptions.HTTPClientError)):
        return True
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    if isinstance(exc, _TERMINAL_OS_ERRORS):
        return False
    if isinstance(exc, OSError):
        if exc.errno is not None:
            return exc.errno in _TRANSIENT_ERRNOS
        message = str(exc)
        return any(marker in message for marker in _TRANSIENT_MESSAGE_MARKERS)
    return False


def _client_error_is_transient(exc: botocore.exceptions.ClientError) -> bool:
    error = exc.response.get("Error", {})
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return error.get("Code") in _THROTTLING_CODES or status >= 500 or status == 429


@contextmanager
def io_errors(what: str) -> Iterator[None]:
    """Re-raise OS-level failures of ``what`` (e.g. "reading part x of table y, run z")
    as TransientError or TerminalError, so every storage failure names its object.
    Arrow's "invalid data" errors inside ``what`` mean a corrupted or foreign file."""
    try:
        yield
    except StorageError:
        raise
    except pa.ArrowInvalid as exc:
        raise TerminalError(f"{what}: corrupted or unreadable data: {exc}") from exc
    except OSError as exc:
        kind = TransientError if is_transient(exc) else TerminalError
        raise kind(f"{what}: {exc}") from exc
