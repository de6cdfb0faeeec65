"""Shared test setup. Fixtures live in ``tests/support/`` and are registered here."""

pytest_plugins = ["tests.support.fixtures"]
