"""Shared pytest configuration: fixtures for the fake model-vendor servers."""

pytest_plugins = ["tests.support.fixtures"]
