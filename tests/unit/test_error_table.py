"""The error table: every error the service raises has one kind and one HTTP status."""

from __future__ import annotations

import json

import pytest

from rearview import errors
from rearview.api.errors import ERRORS, UNMAPPED, error_body, error_kind, http_status


@pytest.mark.parametrize(
    ("exc", "kind", "status"),
    [
        (errors.InvalidInputError("top_k", "must be at least 1"), "invalid_input", 400),
        (errors.ConfigurationError("REARVIEW_ARCHIVE_BUCKET", "is required"), "misconfigured", 500),
        (errors.AuthenticationError("no key"), "unauthenticated", 401),
        (errors.NotFoundError("m1"), "not_found", 404),
        (errors.ConflictError("m1", 1, 2), "conflict", 409),
        (errors.NotPermittedError("m1", "alice", "update", "write your own"), "not_permitted", 403),
        (errors.BusyError("tenant has 2 memory_ingest calls running"), "busy", 429),
        (errors.IndexUnavailableError("down"), "unavailable", 503),  # inherits BackendError's row
        (errors.StorageFullError("disk full"), "storage_full", 507),
        (errors.ReadOnlyStorageError("read-only"), "read_only", 503),
        (errors.RearviewError("anything else"), "error", 500),
    ],
)
def test_each_error_maps_to_its_kind_and_status(exc: errors.RearviewError, kind: str, status: int) -> None:
    assert error_kind(exc) == (kind, status)
    assert http_status(exc) == status


def test_every_error_class_but_the_root_is_mapped() -> None:
    classes = [
        c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.RearviewError)
    ]
    unmapped = [
        c.__name__ for c in classes if c is not errors.RearviewError and error_kind(c.__new__(c)) == UNMAPPED
    ]
    assert unmapped == [] and len(ERRORS) == 10


def test_configuration_errors_are_not_bad_arguments() -> None:
    assert not issubclass(errors.ConfigurationError, errors.InvalidInputError)


def test_error_body_is_the_one_json_error_shape() -> None:
    assert json.loads(error_body("unauthorized", "missing or invalid API key")) == {
        "error": "unauthorized",
        "message": "missing or invalid API key",
    }
