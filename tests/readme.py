"""The README's command blocks, read by the tests that run them word for word."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def section(heading: str) -> str:
    """The text of the README section `## heading` (up to the next heading of level 2)."""
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"README.md has no section '## {heading}'"
    return match.group(1)


def blocks(heading: str, language: str = "sh") -> list[str]:
    """The fenced ```language blocks of a README section, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", section(heading), re.M | re.S)


def commands(block: str) -> list[str]:
    """The command lines of a shell block (comments after `#` kept: bash ignores them)."""
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
