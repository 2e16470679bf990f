"""Importing generated modules: the one helper the tests and tools use (over the runtime's
import_module_file, which the compiler's load_compiled, verify and the session use)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

from runtime_support._importing import import_module_file

_counter = itertools.count()


def import_generated(path: Path, name: str | None = None, *, register: bool = True):
    """Import the generated module at `path` under `name` (default: a fresh, unique name).

    With `register`, the module stays in sys.modules (pickling its output tuples needs it there);
    runners that import thousands of modules pass register=False so that each one can be freed."""
    module = import_module_file(path, name or f"onemodel_generated_{next(_counter)}")
    if not register:
        sys.modules.pop(module.__name__, None)
    return module
