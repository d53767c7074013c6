"""Fixtures for the storage tests: a store on each backend and a row factory.

The S3 backend runs against a real moto server on 127.0.0.1 (one per session, one
bucket); every S3 test gets its own prefix. The AWS environment that the store and
DuckDB read is set per test with ``monkeypatch``, so nothing leaks into other tests.
"""

from __future__ import annotations

import logging
import types
import typing
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import boto3
import pytest
from moto.server import ThreadedMotoServer
from pydantic import BaseModel

from schemas.tables import table_spec
from storage.store import TableStore, open_store

BUCKET = "ratchet-test"
AWS_ENV = ("AWS_ENDPOINT_URL", "RATCHET_S3_ENDPOINT", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE")


@pytest.fixture(scope="session")
def s3_server() -> Iterator[tuple[str, typing.Any]]:
    """A moto S3 server on 127.0.0.1; yields its http://host:port and a boto3 client."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing-secret",
        region_name="us-east-1",
    )
    yield endpoint, client
    server.stop()


@pytest.fixture
def s3_env(s3_server: tuple[str, typing.Any], monkeypatch: pytest.MonkeyPatch) -> str:
    """Point the store and DuckDB at the moto server for one test (restored after).
    The bucket is (re)created per test: moto's in-process state is global, and another
    package's ``mock_aws`` may reset it."""
    s3_endpoint, client = s3_server
    client.create_bucket(Bucket=BUCKET)
    for name in (*AWS_ENV, "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return s3_endpoint


@pytest.fixture
def local_store(tmp_path) -> TableStore:
    return open_store(str(tmp_path / "store"))


@pytest.fixture
def s3_store(s3_env: str) -> TableStore:
    return open_store(f"s3://{BUCKET}/{uuid.uuid4().hex}")


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.integration)])
def store(request: pytest.FixtureRequest) -> TableStore:
    """The same tests on a local folder and on S3."""
    return request.getfixturevalue(f"{request.param}_store")


def _value(annotation: typing.Any, name: str, index: int) -> typing.Any:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return _value(next(a for a in args if a is not type(None)), name, index)
    if origin is typing.Literal:
        return args[index % len(args)]
    if origin is list:
        return [_value(args[0], name, index), _value(args[0], name, index + 1)]
    if origin is dict:
        return {f"k{index}": _value(args[1], name, index)}
    scalars: dict[typing.Any, typing.Any] = {
        str: f"{name}-{index}",
        int: index,
        float: index + 0.25,
        bool: index % 2 == 0,
        datetime: datetime(2026, 1, 1, 12, 0, index % 60, tzinfo=UTC),
    }
    return scalars[annotation]


def build_row(table: str, run_id: str, index: int = 0, *, nulls: bool = False) -> BaseModel:
    """A valid row of ``table``: every field filled from its type (Optional fields left
    None when ``nulls``), so a table added to TABLES is covered without test changes."""
    model = table_spec(table).model
    values = {}
    for name, info in model.model_fields.items():
        optional = type(None) in typing.get_args(info.annotation)
        values[name] = None if optional and nulls else _value(info.annotation, name, index)
    values["run_id"] = run_id
    return model(**values)


@pytest.fixture
def make_row() -> Callable[..., BaseModel]:
    return build_row
