"""Where the store lives: a local folder or an S3 prefix, behind one ``pyarrow.fs`` API.

The store, the compactor and the catalog all resolve a store URI here, so the local
and S3 backends share every code path except the last step of an atomic publish
(local: temp file + fsync + rename; S3: one object upload, visible only when complete).

S3 settings come from the environment, as boto3 and the AWS CLI read them:
``RATCHET_S3_ENDPOINT`` or ``AWS_ENDPOINT_URL`` (``http://host:port`` for MinIO or a
local test server; unset for AWS), ``AWS_REGION`` or ``AWS_DEFAULT_REGION``
(default ``us-east-1``), and credentials from the standard AWS chain.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow.fs as pafs


@dataclass(frozen=True)
class S3Settings:
    """Endpoint and region of the S3 service, shared by pyarrow and DuckDB."""

    endpoint: str | None
    """``host:port`` of a non-AWS endpoint, or None for AWS itself."""
    scheme: str
    region: str

    @classmethod
    def from_env(cls) -> S3Settings:
        url = os.environ.get("RATCHET_S3_ENDPOINT") or os.environ.get("AWS_ENDPOINT_URL")
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        if not url:
            return cls(endpoint=None, scheme="https", region=region)
        parts = urlsplit(url if "://" in url else f"https://{url}")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"S3 endpoint {url!r} is not of the form http(s)://host[:port]")
        return cls(endpoint=parts.netloc, scheme=parts.scheme, region=region)


@dataclass(frozen=True)
class Location:
    """A store root: the filesystem, the root path inside it, and its URI."""

    fs: pafs.FileSystem
    root: str
    uri: str
    is_local: bool

    def path(self, *parts: str) -> str:
        """Filesystem path of ``parts`` under the root."""
        return "/".join((self.root, *parts))

    def uri_of(self, path: str) -> str:
        """Full URI of a filesystem path: an absolute local path or ``s3://bucket/key``."""
        return path if self.is_local else f"s3://{path}"


def resolve(uri: str) -> Location:
    """Location of a store URI: a local path (``file://`` allowed) or ``s3://bucket/prefix``."""
    scheme = urlsplit(uri).scheme
    if scheme == "s3":
        root = uri[len("s3://") :].strip("/")
        if not root:
            raise ValueError(f"store URI {uri!r} names no bucket")
        return Location(fs=_s3_filesystem(S3Settings.from_env()), root=root, uri=f"s3://{root}", is_local=False)
    if scheme in ("", "file"):
        local = Path(uri[len("file://") :] if scheme == "file" else uri).expanduser().resolve()
        return Location(fs=pafs.LocalFileSystem(), root=local.as_posix(), uri=local.as_posix(), is_local=True)
    raise ValueError(f"store URI {uri!r}: scheme {scheme!r} is not supported (use a path or s3://)")


def _s3_filesystem(settings: S3Settings) -> pafs.S3FileSystem:
    # allow_delayed_open: a small object goes up as one PutObject on close instead of a
    # multipart upload opened up front; either way readers see it only when complete.
    return pafs.S3FileSystem(
        region=settings.region,
        endpoint_override=settings.endpoint,
        scheme=settings.scheme,
        allow_delayed_open=True,
    )


def publish(location: Location, path: str, data: bytes | memoryview) -> None:
    """Write ``data`` to ``path`` so that readers see either nothing, the old object or
    all of the new one; an existing object is replaced."""
    if location.is_local:
        _publish_local(Path(path), data)
        return
    with location.fs.open_output_stream(path) as out:
        out.write(data)


def _publish_local(path: Path, data: bytes | memoryview) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # The temp name starts with "." and ends with ".tmp": neither the store nor the
    # DuckDB glob ever reads it, even when a crash leaves it behind.
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable: the directory entry is data too."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def exists(location: Location, path: str) -> bool:
    return location.fs.get_file_info(path).type == pafs.FileType.File


def list_files(location: Location, directory: str, *, recursive: bool) -> list[str]:
    """Paths of the files under ``directory`` (none if it does not exist), sorted."""
    selector = pafs.FileSelector(directory, allow_not_found=True, recursive=recursive)
    infos = location.fs.get_file_info(selector)
    return sorted(info.path for info in infos if info.type == pafs.FileType.File)


def list_file_infos(location: Location, directory: str) -> list[pafs.FileInfo]:
    """Every file under ``directory`` (recursively; none if it does not exist) with its
    size and mtime, from one listing, sorted by path."""
    selector = pafs.FileSelector(directory, allow_not_found=True, recursive=True)
    infos = location.fs.get_file_info(selector)
    return sorted((info for info in infos if info.type == pafs.FileType.File), key=lambda info: info.path)


def read_bytes(location: Location, path: str) -> bytes:
    with location.fs.open_input_stream(path) as stream:
        return stream.read()


def delete(location: Location, path: str) -> bool:
    """Delete a file; False when it was already gone (deletes are retried)."""
    try:
        location.fs.delete_file(path)
    except FileNotFoundError:
        return False
    return True
