"""Fixtures shared by several test files."""

from __future__ import annotations

import pytest

from runtime_support import strings


@pytest.fixture
def without_re2(monkeypatch):
    """The runtime as it is on a machine without the `regex` extra (google-re2): RegexFullMatch's
    and Tokenizer's compiled patterns forgotten before and after."""
    monkeypatch.setattr(strings, "re2", None)
    for compiled in (strings.compile_pattern, strings.compile_longest):
        compiled.cache_clear()
    yield
    for compiled in (strings.compile_pattern, strings.compile_longest):
        compiled.cache_clear()
