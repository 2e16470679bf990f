"""One namespace hands out every identifier of a generated module, in node order.

Identifiers come from ONNX names: characters outside [A-Za-z0-9_] become "_", leading underscores are
dropped (the "_" prefix is kept for the module's own internals), a leading digit gets "v_", and a
keyword, builtin, internal name or earlier identifier gets a numeric suffix. The result can never be
anything but a plain name, whatever the model says.
"""

from __future__ import annotations

import builtins
import keyword
import re

MAX_LENGTH = 64
# Names the generated module itself uses at module level or inside run().
MODULE_NAMES = frozenset(
    {"np", "rt", "typing", "Path", "INPUTS", "OUTPUTS", "Outputs", "run", "run_feeds"}
)
RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins))


def sanitize(name: str, fallback: str = "v") -> str:
    text = re.sub(r"[^0-9A-Za-z_]", "_", name).lstrip("_")
    if len(text) > MAX_LENGTH:  # cut between words, never inside one (unless one word is that long)
        cut = text[: MAX_LENGTH + 1]
        boundary = cut.rfind("_")
        text = cut[:boundary] if boundary > 0 else text[:MAX_LENGTH]
    text = text.rstrip("_") or fallback
    if text[0].isdigit():
        text = "v_" + text
    return text


class Namespace:
    """Maps keys (ONNX value names) to unique, safe identifiers, first come first served."""

    def __init__(self, taken=frozenset()):
        self._used: set[str] = set(RESERVED | MODULE_NAMES | set(taken))
        self._names: dict[str, str] = {}
        self._temporaries = 0

    def __contains__(self, key: str) -> bool:
        return key in self._names

    def name(self, key: str, hint: str | None = None) -> str:
        """The identifier for `key`, created from `hint` (default: the key) on first use."""
        if key in self._names:
            return self._names[key]
        base = sanitize(hint if hint is not None else key)
        candidate, counter = base, 1
        while candidate in self._used:
            candidate = f"{base}_{counter}"
            counter += 1
        self._used.add(candidate)
        self._names[key] = candidate
        return candidate

    def fresh_group(self, hints: list[str]) -> list[str]:
        """New identifiers for `hints` with one shared numeric suffix (`if_then_branch_2` goes with
        `if_else_branch_2`): the smallest that leaves every one free."""
        bases = [sanitize(h) for h in hints]
        counter = 0
        while True:
            names = [b if counter == 0 else f"{b}_{counter}" for b in bases]
            if not any(n in self._used for n in names) and len(set(names)) == len(names):
                break
            counter += 1
        for name in names:
            self._temporaries += 1
            self._used.add(name)
            self._names[f"\0temporary{self._temporaries}"] = name
        return names

    def fresh(self, hint: str) -> str:
        """A new identifier not tied to any key (for temporaries)."""
        self._temporaries += 1
        return self.name(f"\0temporary{self._temporaries}", hint)
