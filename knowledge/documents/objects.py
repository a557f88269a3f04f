"""Object storage for uploaded documents: S3-compatible (AWS, R2, MinIO) or a local folder.

A key names the source it belongs to (`object_key_for`: `org/<organization>/<source id>/document`), never
its content: a name outlives nothing it was made from (docs/decisions.md, "Object keys name the source").
Deleting the last object of a local folder removes the emptied folders up to the store's root, so no name
of a deleted document stays behind; `list_prefix` and `delete_prefix` find every object under a prefix,
referenced by a row or not. Every blocking call (boto3, file I/O) runs in a worker thread. Failures are
translated once here: a missing key is `ObjectNotFoundError`, anything else `ObjectStoreError`, the original
kept as `__cause__`.
This module must never accept a key that escapes its root, and never read credentials from a URL.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable
from pathlib import Path
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
    "object_prefix_for",
    "object_store_from_url",
    "organization_prefix",
]

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

    async def list_prefix(self, prefix: str) -> list[str]:
        """Every key under `prefix` (a folder-like prefix ending in `/`), sorted."""

    async def delete_prefix(self, prefix: str) -> list[str]:
        """Delete every object under `prefix` (and, in a local store, its folders); answers the keys deleted."""


def object_prefix_for(organization_id: UUID | None) -> str:
    """The prefix every object of one scope lives under: `platform/` or `org/<organization id>/`."""
    return "platform/" if organization_id is None else f"org/{UUID(str(organization_id))}/"


def organization_prefix(organization_id: UUID) -> str:
    """The folder holding every object of one organization, `org/<organization id>/` (`object_key_for`)."""
    return object_prefix_for(organization_id)


def object_key_for(organization_id: UUID | None, source_id: UUID) -> str:
    """The key of a source's document: `<scope prefix><source id>/document`; no content hash, no file name."""
    return f"{object_prefix_for(organization_id)}{UUID(str(source_id))}/document"


def _check_prefix(prefix: str) -> str:
    """Refuse a prefix that is not a valid key followed by `/` (listing the whole store is never meant)."""
    if not prefix.endswith("/"):
        raise InvalidObjectKeyError(f"invalid object prefix {prefix!r}: it must end with '/'")
    _check_key(prefix[:-1])
    return prefix


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
            for attempt in range(5):
                partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
                try:
                    self._make_folder(path.parent)
                    partial.write_bytes(data)
                    os.replace(partial, path)
                    return
                except FileNotFoundError:  # a concurrent delete removed an emptied folder: make it again
                    partial.unlink(missing_ok=True)
                    if attempt == 4:
                        raise

        await self._run(write, key)

    async def get(self, key: str) -> bytes:
        """Read `<root>/<key>`."""
        return await self._run(self._path(key).read_bytes, key)

    async def delete(self, key: str) -> None:
        """Remove `<root>/<key>` if it exists, then every folder it leaves empty up to the root."""
        path = self._path(key)

        def remove() -> None:
            path.unlink(missing_ok=True)
            self._prune(path.parent)

        await self._run(remove, key)

    async def exists(self, key: str) -> bool:
        """Whether `<root>/<key>` is a file."""
        return await asyncio.to_thread(self._path(key).is_file)

    async def list_prefix(self, prefix: str) -> list[str]:
        """Every file under `<root>/<prefix>` as a key, sorted (temporary files of a write in flight included)."""
        folder = self._path(_check_prefix(prefix)[:-1])

        def walk() -> list[str]:
            if not folder.is_dir():
                return []
            return sorted(p.relative_to(self.root).as_posix() for p in folder.rglob("*") if not p.is_dir())

        return await self._run(walk, prefix)

    async def delete_prefix(self, prefix: str) -> list[str]:
        """Delete every file under `<root>/<prefix>`, then the emptied folders, the prefix's own and its parents'."""
        folder = self._path(_check_prefix(prefix)[:-1])
        keys = await self.list_prefix(prefix)

        def remove() -> None:
            for key in keys:
                (self.root / key).unlink(missing_ok=True)
            if folder.is_dir():
                for sub in sorted(
                    (p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
                ):
                    self._prune_one(sub)
            self._prune(folder)

        await self._run(remove, prefix)
        return keys

    def _make_folder(self, folder: Path) -> None:
        """Make the folder of a key about to be written (and its parents)."""
        folder.mkdir(parents=True, exist_ok=True)

    def _prune(self, folder: Path) -> None:
        """Remove `folder` and its parents while they are empty, never the root itself."""
        while folder != self.root and folder.is_relative_to(self.root) and self._prune_one(folder):
            folder = folder.parent

    @staticmethod
    def _prune_one(folder: Path) -> bool:
        """Remove an empty folder; False when it is not empty (or already gone, which ends nothing)."""
        try:
            folder.rmdir()
        except FileNotFoundError:
            return True
        except OSError:  # not empty: a put in flight or another object still lives there
            return False
        return True

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

    async def list_prefix(self, prefix: str) -> list[str]:
        """Every key under `prefix` (the store's own prefix stripped), sorted; every page is read."""
        full = self._key(_check_prefix(prefix)[:-1]) + "/"

        def walk() -> list[str]:
            keys: list[str] = []
            for page in self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=full):
                keys.extend(item["Key"][len(self.prefix) :] for item in page.get("Contents", []) if "Key" in item)
            return sorted(keys)

        return await self._run(walk, prefix)

    async def delete_prefix(self, prefix: str) -> list[str]:
        """Delete every object under `prefix`, 1,000 keys per request (S3 has no folders to remove)."""
        keys = await self.list_prefix(prefix)

        def remove() -> None:
            for start in range(0, len(keys), 1000):
                batch: list[ObjectIdentifierTypeDef] = [
                    {"Key": self.prefix + key} for key in keys[start : start + 1000]
                ]
                answer = self._client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})
                if answer.get("Errors"):
                    failed = answer["Errors"][0]
                    raise ObjectStoreError(f"S3 {failed.get('Code', 'error')} deleting {failed.get('Key', '')!r}")

        await self._run(remove, prefix)
        return keys

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
