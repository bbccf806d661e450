"""Shared fixtures for every tier: the engines (moto, OpenSearch) come from `tests/fixtures/`."""

pytest_plugins = ["tests.fixtures.aws", "tests.fixtures.opensearch"]
