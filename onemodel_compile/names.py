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
    text = re.sub(r"[^0-9A-Za-z_]", "_", name).lstrip("_")[:MAX_LENGTH].rstrip("_") or fallback
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

    def fresh(self, hint: str) -> str:
        """A new identifier not tied to any key (for temporaries)."""
        self._temporaries += 1
        return self.name(f"\0temporary{self._temporaries}", hint)
