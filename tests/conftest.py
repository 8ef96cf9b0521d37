"""Registers the shared fixtures plugin (tests/support/plugin.py) for every suite."""

pytest_plugins = ["support.plugin"]
