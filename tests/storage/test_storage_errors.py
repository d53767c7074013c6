"""Which failures are worth a retry, and failures that name what failed."""

from __future__ import annotations

import errno
import socket

import botocore.exceptions
import pytest

from storage.errors import TerminalError, TransientError, io_errors, is_transient
from storage.store import open_store


def _client_error(code: str, status: int) -> botocore.exceptions.ClientError:
    response = {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return botocore.exceptions.ClientError(response, "PutObject")


TRANSIENT = [
    TransientError("x"),
    _client_error("SlowDown", 503),
    _client_error("ThrottlingException", 400),
    _client_error("InternalError", 500),
    _client_error("Whatever", 502),
    _client_error("TooManyRequests", 429),
    botocore.exceptions.EndpointConnectionError(endpoint_url="http://127.0.0.1:9"),
    botocore.exceptions.ReadTimeoutError(endpoint_url="http://127.0.0.1:9"),
    botocore.exceptions.ConnectTimeoutError(endpoint_url="http://127.0.0.1:9"),
    ConnectionResetError(errno.ECONNRESET, "reset"),
    TimeoutError("slow"),
    OSError(errno.EIO, "I/O error"),
    OSError("When getting information for key 'x': AWS Error NETWORK_CONNECTION during HeadObject operation"),
    OSError("AWS Error SLOW_DOWN during PutObject operation: Please reduce your request rate."),
]

TERMINAL = [
    TerminalError("x"),
    _client_error("NoSuchBucket", 404),
    _client_error("AccessDenied", 403),
    FileNotFoundError(errno.ENOENT, "missing"),
    PermissionError(errno.EACCES, "denied"),
    OSError(errno.ENOSPC, "disk full"),
    OSError("AWS Error ACCESS_DENIED during HeadObject operation"),
    ValueError("bad row"),
    TypeError("bad model"),
    KeyError("unknown table"),
]


@pytest.mark.parametrize("exc", TRANSIENT, ids=repr)
def test_transient_failures_are_retried(exc: BaseException) -> None:
    assert is_transient(exc)


@pytest.mark.parametrize("exc", TERMINAL, ids=repr)
def test_other_failures_are_not(exc: BaseException) -> None:
    assert not is_transient(exc)


def test_io_errors_name_the_object_and_keep_the_cause() -> None:
    with pytest.raises(TransientError, match="writing part p of table 't', run 'r': .*reset") as info:
        with io_errors("writing part p of table 't', run 'r'"):
            raise ConnectionResetError(errno.ECONNRESET, "reset")
    assert isinstance(info.value.__cause__, ConnectionResetError)
    with pytest.raises(TerminalError, match="reading blob b: .*denied"):
        with io_errors("reading blob b"):
            raise PermissionError(errno.EACCES, "denied")


def test_corrupted_part_is_a_terminal_error_naming_it(tmp_path) -> None:
    store = open_store(str(tmp_path))
    store.write_part("gate_decisions", "run1", "gate", "k", [])
    part = tmp_path / "tables" / "gate_decisions" / "run_id=run1" / "gate-k.parquet"
    part.write_bytes(b"not parquet at all")
    with pytest.raises(TerminalError, match="reading part gate-k.parquet of table 'gate_decisions', run 'run1'"):
        store.read_part("gate_decisions", "run1", "gate", "k")
    with pytest.raises(TerminalError, match="reading table 'gate_decisions'"):
        store.read("gate_decisions")


@pytest.mark.integration
def test_unreachable_s3_is_a_transient_error_naming_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    store = open_store("s3://nowhere/prefix")
    with pytest.raises(TransientError, match="listing table 'scores'"):
        store.read("scores")
