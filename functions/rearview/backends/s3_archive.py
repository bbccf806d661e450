"""S3 `Archive`: archived memories as gzip JSON Lines, one object per archived batch.

Layout: `<prefix>tenant=<tenant>/date=<YYYY-MM-DD>/<ulid>.jsonl.gz` (the tenant URL-quoted, the
date the batch was archived, UTC). Each line is one archived memory:
`{"v": 1, "memory": {...}, "history": [{...}, ...]}` (the pydantic JSON of `Memory` and its
`HistoryEvent`s, oldest first). The object key is the reference the store keeps on the
memory's tombstone (`archive_ref`), so restore reads exactly one object.

Every object is written with server-side encryption: SSE-S3 (AES256), or SSE-KMS when a key
is given. A hard forget rewrites the object without the memory (conditional on the ETag it
read, so concurrent deletes from one batch cannot resurrect each other's memories) or deletes
it when nothing is left; the bucket has no versioning, so nothing of it remains.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from rearview.backends.archive_format import (
    FORMAT_VERSION,
    Entry,
    checked_entry,
    decode,
    encode,
    object_name,
    tenant_prefix,
)
from rearview.errors import ArchiveError, InvalidInputError, NotFoundError
from rearview.models import HistoryEvent, Memory
from rearview.shared.clock import Clock, SystemClock
from rearview.shared.lazy import Lazy

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client
    from mypy_boto3_s3.type_defs import PutObjectRequestTypeDef

__all__ = ["FORMAT_VERSION", "S3Archive"]

_MAX_REWRITE_ATTEMPTS: Final = 5
_COLD_STATES: Final = frozenset({"InvalidObjectState"})
_MISSING: Final = frozenset({"NoSuchKey", "404", "NotFound"})


class S3Archive:
    """An `Archive` on one S3 bucket. The constructor does no I/O; the client is created lazily.

    Raises only `rearview.errors` types: `NotFoundError` when the memory is not in the
    referenced object (or the reference belongs to another tenant), `InvalidInputError` for a
    batch that does not belong to the tenant, `ArchiveError` for everything S3 refuses
    (including objects that lifecycle moved to DEEP_ARCHIVE: a restore is then requested and
    the call can be retried once S3 has restored the object, within hours).
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "archive/",
        client: S3Client | None = None,
        kms_key_id: str | None = None,
        *,
        clock: Clock | None = None,
    ) -> None:
        self._bucket = bucket
        self._prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
        self._client = Lazy(_create_client, client)
        self._kms_key_id = kms_key_id
        self._clock = clock or SystemClock()

    @property
    def bucket(self) -> str:
        return self._bucket

    def tenant_prefix(self, tenant_id: str) -> str:
        """The key prefix under which every archived object of the tenant lives."""
        return self._prefix + tenant_prefix(tenant_id)

    # ------------------------------------------------------------------ the port

    def put(self, tenant_id: str, items: Sequence[tuple[Memory, Sequence[HistoryEvent]]]) -> str:
        """Write the batch as one new encrypted object and return its key (the reference).

        Either the whole object is stored or `ArchiveError` is raised and nothing is.
        """
        if not items:
            raise InvalidInputError("items", "must hold at least one memory to archive")
        entries: list[Entry] = []
        for memory, history in items:
            entries.append(checked_entry(tenant_id, memory, history))
        now = self._clock.now()
        key = self._prefix + object_name(tenant_id, now)
        self._write(key, entries, if_match=None)
        return key

    def get(self, tenant_id: str, ref: str, memory_id: str) -> tuple[Memory, list[HistoryEvent]]:
        """The archived memory and its history, as they were put (`NotFoundError` if absent)."""
        if not self._owns(tenant_id, ref):
            raise NotFoundError(memory_id)
        found = self._read(ref)
        if found is None:
            raise NotFoundError(memory_id)
        for memory, history in found[0]:
            if memory.id == memory_id and memory.tenant_id == tenant_id:
                return memory, history
        raise NotFoundError(memory_id)

    def delete(self, tenant_id: str, ref: str, memory_id: str) -> None:
        """Remove the memory from its object (deleting the object once empty). Idempotent."""
        if not self._owns(tenant_id, ref):
            return
        for _ in range(_MAX_REWRITE_ATTEMPTS):
            found = self._read(ref)
            if found is None:
                return
            entries, etag = found
            remaining = [e for e in entries if e[0].id != memory_id]
            if len(remaining) == len(entries):
                return
            if not remaining:
                self._call("DeleteObject", self._client.get().delete_object, Bucket=self._bucket, Key=ref)
                return
            if self._write(ref, remaining, if_match=etag):
                return
        raise ArchiveError(f"archive object {ref} kept changing while removing memory {memory_id}")

    def iter_refs(self, tenant_id: str) -> Iterator[str]:
        """Every object key under the tenant's prefix (for audits, tests and lifecycle checks)."""
        paginator = self._client.get().get_paginator("list_objects_v2")
        pages = paginator.paginate(Bucket=self._bucket, Prefix=self.tenant_prefix(tenant_id))
        try:
            for page in pages:
                for obj in page.get("Contents", []):
                    yield obj["Key"]
        except Exception as exc:
            raise _archive_error("ListObjectsV2", exc) from exc

    # ------------------------------------------------------------------ objects

    def _owns(self, tenant_id: str, ref: str) -> bool:
        return ref.startswith(self.tenant_prefix(tenant_id)) and "/../" not in ref

    def _read(self, key: str) -> tuple[list[Entry], str] | None:
        """The object's entries and ETag, or None if there is no such object."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            out = self._client.get().get_object(Bucket=self._bucket, Key=key)
            body = out["Body"].read()
        except ClientError as exc:
            code = _code(exc)
            if code in _MISSING:
                return None
            if code in _COLD_STATES:
                self._request_restore(key)
                raise ArchiveError(
                    f"archive object {key} is in cold storage; a restore was requested, retry in a few hours"
                ) from exc
            raise _archive_error("GetObject", exc) from exc
        except BotoCoreError as exc:
            raise _archive_error("GetObject", exc) from exc
        return decode(key, body), str(out.get("ETag", ""))

    def _write(self, key: str, entries: list[Entry], *, if_match: str | None) -> bool:
        """Put the object (encrypted); False if `if_match` no longer matches (someone rewrote it)."""
        from botocore.exceptions import BotoCoreError, ClientError

        request: PutObjectRequestTypeDef = {
            "Bucket": self._bucket,
            "Key": key,
            "Body": encode(entries),
            "ContentType": "application/gzip",
            "Metadata": {"format": f"rearview-archive-v{FORMAT_VERSION}", "count": str(len(entries))},
        }
        if self._kms_key_id is not None:
            request["ServerSideEncryption"] = "aws:kms"
            request["SSEKMSKeyId"] = self._kms_key_id
        else:
            request["ServerSideEncryption"] = "AES256"
        if if_match is not None:
            request["IfMatch"] = if_match
        try:
            self._client.get().put_object(**request)
        except ClientError as exc:
            if if_match is not None and _code(exc) in {
                "PreconditionFailed",
                "412",
                "ConditionalRequestConflict",
            }:
                return False
            raise _archive_error("PutObject", exc) from exc
        except BotoCoreError as exc:
            raise _archive_error("PutObject", exc) from exc
        return True

    def _request_restore(self, key: str) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self._client.get().restore_object(
                Bucket=self._bucket,
                Key=key,
                RestoreRequest={"Days": 7, "GlacierJobParameters": {"Tier": "Standard"}},
            )
        except ClientError as exc:
            if _code(exc) != "RestoreAlreadyInProgress":
                raise _archive_error("RestoreObject", exc) from exc
        except BotoCoreError as exc:
            raise _archive_error("RestoreObject", exc) from exc

    def _call(self, operation: str, fn: Any, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return fn(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise _archive_error(operation, exc) from exc


# --------------------------------------------------------------------------- helpers


def _create_client() -> S3Client:
    import boto3
    from botocore.config import Config

    return boto3.client("s3", config=Config(retries={"mode": "standard", "max_attempts": 5}))


def _code(exc: Any) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _archive_error(operation: str, exc: Exception) -> ArchiveError:
    from botocore.exceptions import ClientError

    if isinstance(exc, ClientError):
        message = exc.response.get("Error", {}).get("Message", "")
        return ArchiveError(f"S3 {operation} failed ({_code(exc)}): {message}")
    return ArchiveError(f"S3 {operation} failed: {exc}")
