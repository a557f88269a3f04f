from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import pytest
from moto.server import ThreadedMotoServer

from knowledge.documents.objects import (
    LocalObjectStore,
    ObjectStore,
    S3ObjectStore,
    object_key_for,
    object_prefix_for,
    object_store_from_url,
    organization_prefix,
)
from knowledge.errors import InvalidObjectKeyError, ObjectNotFoundError, ObjectStoreError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

SHA = hashlib.sha256(b"document").hexdigest()
ORG = uuid.UUID("11111111-2222-3333-4444-555555555555")


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="module")
def admin(moto_endpoint: str) -> S3Client:
    return boto3.session.Session().client(
        "s3",
        endpoint_url=moto_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture(scope="module")
def bucket(admin: S3Client) -> str:
    name = f"bucket-{uuid.uuid4().hex[:12]}"
    admin.create_bucket(Bucket=name)
    return name


@pytest.fixture(scope="module")
def shared_s3_store(moto_endpoint: str, bucket: str) -> S3ObjectStore:
    return s3_store(moto_endpoint, bucket)


def s3_store(moto_endpoint: str, bucket: str, **options: object) -> S3ObjectStore:
    return S3ObjectStore(
        bucket,
        endpoint_url=moto_endpoint,
        region="us-east-1",
        access_key="testing",
        secret_key="testing",
        addressing_style="path",
        **options,  # type: ignore[arg-type]
    )


@pytest.fixture(params=["local", "s3"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ObjectStore]:
    if request.param == "local":
        yield LocalObjectStore(tmp_path / "objects")
    else:
        yield request.getfixturevalue("shared_s3_store")


async def test_put_get_exists_delete_round_trip(store: ObjectStore) -> None:
    key = object_key_for(uuid.uuid4(), uuid.uuid4())
    assert not await store.exists(key)
    await store.put(key, b"%PDF-1.7 bytes", content_type="application/pdf")
    assert await store.exists(key)
    assert await store.get(key) == b"%PDF-1.7 bytes"
    await store.put(key, b"replaced", content_type="application/pdf")
    assert await store.get(key) == b"replaced"
    await store.delete(key)
    assert not await store.exists(key)
    await store.delete(key)  # deleting twice is not an error


async def test_missing_object_is_object_not_found(store: ObjectStore) -> None:
    with pytest.raises(ObjectNotFoundError) as info:
        await store.get("platform/missing")
    assert info.value.code == "object_not_found" and not info.value.retryable


@pytest.mark.parametrize("key", ["../escape", "a/../../escape", "/etc/passwd", "", "a//b", "./a", "a\\b", "a/\x00"])
async def test_keys_that_escape_the_root_are_refused(store: ObjectStore, key: str) -> None:
    with pytest.raises(InvalidObjectKeyError):
        await store.put(key, b"x", content_type="text/plain")
    with pytest.raises(InvalidObjectKeyError):
        await store.get(key)


async def test_local_store_refuses_a_symlink_out_of_its_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(outside)
    with pytest.raises(InvalidObjectKeyError, match="outside the store"):
        await LocalObjectStore(root).put("link/file", b"x", content_type="text/plain")
    assert not (outside / "file").exists()


async def test_local_store_writes_under_its_root(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    await store.put("platform/abc/doc.md", b"# hi", content_type="text/markdown")
    assert (tmp_path / "platform" / "abc" / "doc.md").read_bytes() == b"# hi"
    assert [p.name for p in (tmp_path / "platform" / "abc").iterdir()] == ["doc.md"], "no temporary file left"


async def test_s3_store_keeps_the_content_type_and_prefix(moto_endpoint: str, bucket: str, admin: S3Client) -> None:
    store = s3_store(moto_endpoint, bucket, prefix="/uploads/")
    await store.put("org/x/doc.pdf", b"data", content_type="application/pdf")
    head = admin.head_object(Bucket=bucket, Key="uploads/org/x/doc.pdf")
    assert head["ContentType"] == "application/pdf"


async def test_s3_missing_bucket_is_an_object_store_error(moto_endpoint: str) -> None:
    store = s3_store(moto_endpoint, "no-such-bucket")
    with pytest.raises(ObjectStoreError) as info:
        await store.put("a", b"x", content_type="text/plain")
    assert type(info.value) is ObjectStoreError and info.value.retryable
    assert "NoSuchBucket" in info.value.message


async def test_s3_unreachable_endpoint_is_a_retryable_object_store_error() -> None:
    store = S3ObjectStore(
        "b", endpoint_url="http://127.0.0.1:9", region="us-east-1", access_key="k", secret_key="s", max_attempts=1
    )
    with pytest.raises(ObjectStoreError, match="unreachable") as info:
        await store.get("a")
    assert info.value.retryable


def test_object_keys_name_the_source_not_its_content() -> None:
    source = uuid.uuid4()
    assert object_key_for(None, source) == f"platform/{source}/document"
    assert object_key_for(ORG, source) == f"org/{ORG}/{source}/document"
    assert object_key_for(ORG, source).startswith(object_prefix_for(ORG)) and object_prefix_for(ORG) == f"org/{ORG}/"
    assert object_prefix_for(None) == "platform/"


async def test_a_delete_leaves_no_empty_folder(tmp_path: Path) -> None:
    """Rule: deleting an object removes the folders it leaves empty (a folder name outlives nothing)."""
    root = tmp_path / "objects"
    store = LocalObjectStore(root)
    first, second = object_key_for(ORG, uuid.uuid4()), object_key_for(ORG, uuid.uuid4())
    await store.put(first, b"a", content_type="text/plain")
    await store.put(second, b"b", content_type="text/plain")
    await store.delete(first)
    assert [p.relative_to(root).as_posix() for p in sorted(root.rglob("*"))] == [
        "org",
        f"org/{ORG}",
        f"org/{ORG}/{second.split('/')[2]}",
        second,
    ]
    await store.delete(second)
    assert root.is_dir() and list(root.iterdir()) == [], "the organization's folders went with its last object"
    await store.put(first, b"again", content_type="text/plain")  # the emptied folders are made again
    assert await store.get(first) == b"again"


async def test_prefix_listing_and_deleting_find_every_object(store: ObjectStore, tmp_path: Path) -> None:
    """Rule: `list_prefix`/`delete_prefix` reach every object under an organization's prefix, and only those."""
    org, other = uuid.uuid4(), uuid.uuid4()
    mine = sorted([object_key_for(org, uuid.uuid4()), f"{object_prefix_for(org)}{SHA}/old-name.md"])
    theirs = object_key_for(other, uuid.uuid4())
    for key in [*mine, theirs]:
        await store.put(key, b"x", content_type="text/plain")
    assert await store.list_prefix(object_prefix_for(org)) == mine
    assert await store.delete_prefix(object_prefix_for(org)) == mine
    assert await store.list_prefix(object_prefix_for(org)) == []
    assert await store.list_prefix(object_prefix_for(other)) == [theirs]
    if isinstance(store, LocalObjectStore):
        assert not (store.root / "org" / str(org)).exists(), "no folder of the organization is left"
    with pytest.raises(InvalidObjectKeyError):
        await store.list_prefix("org")  # a prefix is a folder: never the whole store by accident
    await store.delete_prefix(object_prefix_for(other))


async def test_s3_prefix_listing_reads_every_page(moto_endpoint: str, bucket: str) -> None:
    """Rule: the S3 listing follows continuation pages (1,000 keys per page) and strips the store's prefix."""
    store = s3_store(moto_endpoint, bucket, prefix="tenant-files")
    org = uuid.uuid4()
    keys = sorted(object_key_for(org, uuid.uuid4()) for _ in range(1005))
    await asyncio.gather(*(store.put(key, b"x", content_type="text/plain") for key in keys))
    assert await store.list_prefix(object_prefix_for(org)) == keys
    assert len(await store.delete_prefix(object_prefix_for(org))) == 1005
    assert await store.list_prefix(object_prefix_for(org)) == []


def test_store_from_url(tmp_path: Path) -> None:
    local = object_store_from_url(f"file://{tmp_path}")
    assert isinstance(local, LocalObjectStore) and local.root == tmp_path.resolve()
    s3 = object_store_from_url(
        "s3://docs/tenant-files?endpoint_url=http://127.0.0.1:9000&region=auto&addressing_style=path"
    )
    assert isinstance(s3, S3ObjectStore) and s3.bucket == "docs" and s3.prefix == "tenant-files/"
    assert s3._client.meta.endpoint_url == "http://127.0.0.1:9000"
    assert s3._client.meta.config.s3 == {"addressing_style": "path"}  # type: ignore[attr-defined]
    assert isinstance(s3, ObjectStore) and isinstance(local, ObjectStore)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://x",
        "s3://key:secret@bucket",
        "s3://bucket?color=red",
        "s3://bucket?addressing_style=odd",
        "file://host/path",
        "s3://",
    ],
)
def test_store_from_url_refuses_bad_urls(url: str) -> None:
    with pytest.raises(ValueError):
        object_store_from_url(url)


class _RacedStore(LocalObjectStore):
    """A local store whose first folder made for a put is removed at once, as a concurrent delete of the
    folder's last other object would between the put's mkdir and its write."""

    raced = 0

    def _make_folder(self, folder: Path) -> None:
        super()._make_folder(folder)
        if not self.raced:
            self.raced += 1
            self._prune(folder)


async def test_a_put_whose_folder_a_concurrent_delete_removed_still_lands(tmp_path: Path) -> None:
    """Rule: a put whose parent folder a concurrent delete removes makes the folder again (no lost upload)."""
    store = _RacedStore(tmp_path / "objects")
    key = object_key_for(ORG, uuid.uuid4())
    await store.put(key, b"new", content_type="text/plain")
    assert store.raced == 1 and await store.get(key) == b"new"


async def test_delete_prefix_removes_every_object_under_the_folder_and_nothing_else(store: ObjectStore) -> None:
    org, other = uuid.uuid4(), uuid.uuid4()
    mine = [object_key_for(org, uuid.uuid4()), object_key_for(org, uuid.uuid4())]
    mine.append(f"{organization_prefix(org)}stray/unreferenced.bin")  # no row names it: swept all the same
    theirs = object_key_for(other, uuid.uuid4())
    for key in [*mine, theirs]:
        await store.put(key, b"bytes", content_type="text/plain")
    assert all(key.startswith(organization_prefix(org)) for key in mine[:2]), "object_key_for keeps the folder"

    assert len(await store.delete_prefix(organization_prefix(org))) == 3
    assert [await store.exists(key) for key in mine] == [False, False, False]
    assert await store.exists(theirs)
    assert await store.delete_prefix(organization_prefix(org)) == [], "a second sweep finds nothing"


@pytest.mark.parametrize("prefix", ["", "/", "org", "../", "org/../"])
async def test_delete_prefix_refuses_a_prefix_that_is_not_a_folder(store: ObjectStore, prefix: str) -> None:
    with pytest.raises(InvalidObjectKeyError):
        await store.delete_prefix(prefix)
