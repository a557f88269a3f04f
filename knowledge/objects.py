"""Object storage for uploaded documents: S3-compatible (AWS, R2, MinIO) or a local folder.

Keys are content-addressed (`object_key_for`), so uploading the same file twice writes one object.
Every blocking call (boto3, file I/O) runs in a worker thread. Failures are translated once here: a
missing key is `ObjectNotFoundError`, anything else `ObjectStoreError`, the original kept as `__cause__`.
This module must never accept a key that escapes its root, and never read credentials from a URL.
"""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar, runtime_checkable
from urllib.parse import parse_qs, unquote, urlparse
from uuid import UUID

from knowledge.errors import InvalidObjectKeyError, ObjectNotFoundError, ObjectStoreError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import ObjectIdentifierTypeDef

__all__ = [
    "LocalObjectStore",
    "ObjectStore",
    "S3ObjectStore",
    "object_key_for",
    "object_store_from_url",
    "organization_prefix",
]

_SHA256 = re.compile(r"[0-9a-f]{64}")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_NOT_FOUND = frozenset({"NoSuchKey", "404", "NotFound"})
_T = TypeVar("_T")


@runtime_checkable
class ObjectStore(Protocol):
    """Where uploaded document bytes live, addressed by key."""

    async def put(self, key: str, data: bytes, *, content_type: str) -> None:
        """Store `data` under `key`, replacing any object there."""

    async def get(self, key: str) -> bytes:
        """The bytes under `key`, or `ObjectNotFoundError`."""

    async def delete(self, key: str) -> None:
        """Remove `key`; removing a missing key is not an error."""

    async def exists(self, key: str) -> bool:
        """Whether an object is stored under `key`."""

    async def delete_prefix(self, prefix: str) -> int:
        """Remove every object whose key starts with `prefix` (a folder: ends with `/`); answer how many."""


def organization_prefix(organization_id: UUID) -> str:
    """The folder holding every object of one organization, `org/<organization id>/` (`object_key_for`)."""
    return f"org/{UUID(str(organization_id))}/"


def _check_prefix(prefix: str) -> str:
    """A prefix is a key of folders ending with `/`: never empty, never the whole store."""
    if not prefix.endswith("/") or len(prefix) < 2:
        raise InvalidObjectKeyError(f"invalid object prefix {prefix!r}: name a folder ending with '/'")
    _check_key(prefix[:-1])
    return prefix


def object_key_for(organization_id: UUID | None, content_sha256: str, filename: str) -> str:
    """The key of an upload: `platform/<sha256>/<name>` or `org/<organization id>/<sha256>/<name>`."""
    digest = content_sha256.lower()
    if not _SHA256.fullmatch(digest):
        raise InvalidObjectKeyError(f"content_sha256 must be 64 hex digits, got {content_sha256!r}")
    stem = PurePosixPath(filename.replace("\\", "/")).name
    name = _UNSAFE.sub("_", stem).strip("._")[:100] or "document"
    prefix = "platform" if organization_id is None else f"org/{UUID(str(organization_id))}"
    return f"{prefix}/{digest}/{name}"


def _check_key(key: str) -> str:
    """Refuse keys that are empty, absolute, or hold `..`, `.`, empty segments, backslashes or NUL."""
    parts = key.split("/")
    if not key or key.startswith("/") or "\\" in key or "\x00" in key or any(part in ("", ".", "..") for part in parts):
        raise InvalidObjectKeyError(f"invalid object key {key!r}: use a relative key without '..'")
    return key


class LocalObjectStore:
    """Objects as files under `root`: the store of the embedded, single-machine default."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()

    def _path(self, key: str) -> Path:
        path = (self.root / _check_key(key)).resolve()
        if not path.is_relative_to(self.root):  # a symlink inside the root pointing out of it
            raise InvalidObjectKeyError(f"invalid object key {key!r}: it resolves outside the store")
        return path

    async def put(self, key: str, data: bytes, *, content_type: str) -> None:
        """Write `data` to `<root>/<key>` atomically (temporary file, then rename)."""
        path = self._path(key)

        def write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
            partial.write_bytes(data)
            os.replace(partial, path)

        await self._run(write, key)

    async def get(self, key: str) -> bytes:
        """Read `<root>/<key>`."""
        return await self._run(self._path(key).read_bytes, key)

    async def delete(self, key: str) -> None:
        """Remove `<root>/<key>` if it exists."""
        await self._run(lambda: self._path(key).unlink(missing_ok=True), key)

    async def exists(self, key: str) -> bool:
        """Whether `<root>/<key>` is a file."""
        return await asyncio.to_thread(self._path(key).is_file)

    async def delete_prefix(self, prefix: str) -> int:
        """Remove every file under `<root>/<prefix>` (partial writes included) and the emptied folders."""
        folder = self._path(_check_prefix(prefix)[:-1])

        def sweep() -> int:
            if not folder.is_dir():
                return 0
            files = [p for p in folder.rglob("*") if p.is_file() or p.is_symlink()]
            for path in files:
                path.unlink(missing_ok=True)
            for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
                sub.rmdir()
            folder.rmdir()
            return len(files)

        return await self._run(sweep, prefix)

    @staticmethod
    async def _run(call: Callable[[], _T], key: str) -> _T:
        try:
            return await asyncio.to_thread(call)
        except FileNotFoundError as exc:
            raise ObjectNotFoundError(f"no object under {key!r}") from exc
        except OSError as exc:
            raise ObjectStoreError(f"local object store failed for {key!r}: {exc}") from exc


class S3ObjectStore:
    """Objects in an S3-compatible bucket; `endpoint_url` selects R2, MinIO or another provider."""

    def __init__(
        self,
        bucket: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        addressing_style: Literal["auto", "path", "virtual"] = "auto",
        prefix: str = "",
        max_attempts: int = 5,
    ) -> None:
        if not bucket:
            raise ValueError("an S3 object store needs a bucket name")
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        import boto3  # the SDK is imported by the store that uses it, never by `import knowledge`
        from botocore.config import Config

        session = boto3.session.Session(  # its own session: the default one is not thread-safe
            aws_access_key_id=access_key, aws_secret_access_key=secret_key, region_name=region
        )
        config = Config(
            s3={"addressing_style": addressing_style},
            retries={"mode": "standard", "max_attempts": max_attempts},
        )
        self._client: S3Client = session.client("s3", endpoint_url=endpoint_url, config=config)

    def _key(self, key: str) -> str:
        return self.prefix + _check_key(key)

    async def put(self, key: str, data: bytes, *, content_type: str) -> None:
        """Upload `data` under `key`."""
        full = self._key(key)
        await self._run(
            lambda: self._client.put_object(Bucket=self.bucket, Key=full, Body=data, ContentType=content_type),
            key,
        )

    async def get(self, key: str) -> bytes:
        """Download the object under `key`."""
        full = self._key(key)

        def read() -> bytes:
            body: bytes = self._client.get_object(Bucket=self.bucket, Key=full)["Body"].read()
            return body

        return await self._run(read, key)

    async def delete(self, key: str) -> None:
        """Delete the object under `key` (S3 treats a missing key as deleted)."""
        full = self._key(key)
        await self._run(lambda: self._client.delete_object(Bucket=self.bucket, Key=full), key)

    async def exists(self, key: str) -> bool:
        """Whether an object is stored under `key` (a HEAD request)."""
        full = self._key(key)
        try:
            await self._run(lambda: self._client.head_object(Bucket=self.bucket, Key=full), key)
        except ObjectNotFoundError:
            return False
        return True

    async def delete_prefix(self, prefix: str) -> int:
        """List every key under `prefix` and delete them in batches of 1,000 (S3's limit per request)."""
        full = self._key(_check_prefix(prefix)[:-1]) + "/"

        def sweep() -> int:
            removed = 0
            for page in self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=full):
                keys: list[ObjectIdentifierTypeDef] = [{"Key": item["Key"]} for item in page.get("Contents", [])]
                if keys:
                    answer = self._client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys, "Quiet": True})
                    if answer.get("Errors"):
                        raise ObjectStoreError(f"S3 refused to delete {len(answer['Errors'])} objects under {prefix!r}")
                    removed += len(keys)
            return removed

        return await self._run(sweep, prefix)

    async def _run(self, call: Callable[[], _T], key: str) -> _T:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return await asyncio.to_thread(call)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in _NOT_FOUND:
                raise ObjectNotFoundError(f"no object under {key!r} in bucket {self.bucket!r}") from exc
            raise ObjectStoreError(f"S3 {code or 'error'} for {key!r} in bucket {self.bucket!r}") from exc
        except BotoCoreError as exc:
            raise ObjectStoreError(f"S3 unreachable for {key!r}: {exc}") from exc


def object_store_from_url(url: str) -> ObjectStore:
    """`file:///path` -> LocalObjectStore; `s3://bucket[/prefix]?endpoint_url=&region=&addressing_style=`."""
    parsed = urlparse(url)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost") or not parsed.path:
            raise ValueError(f"a file store URL looks like file:///absolute/path, got {url!r}")
        return LocalObjectStore(Path(unquote(parsed.path)))
    if parsed.scheme == "s3":
        if parsed.username or parsed.password:
            raise ValueError("put S3 credentials in the environment (AWS_ACCESS_KEY_ID...), not in the URL")
        query = {name: values[-1] for name, values in parse_qs(parsed.query).items()}
        unknown = set(query) - {"endpoint_url", "region", "addressing_style"}
        if unknown or not parsed.hostname:
            raise ValueError(f"bad S3 store URL {url!r}; options: endpoint_url, region, addressing_style")
        style = query.get("addressing_style", "auto")
        if style not in ("auto", "path", "virtual"):
            raise ValueError(f"addressing_style must be auto, path or virtual, got {style!r}")
        return S3ObjectStore(
            parsed.netloc,
            endpoint_url=query.get("endpoint_url"),
            region=query.get("region"),
            addressing_style=style,  # type: ignore[arg-type]  # checked against the Literal above
            prefix=unquote(parsed.path),
        )
    raise ValueError(f"unsupported object store URL {url!r}; use file:///path or s3://bucket")
