"""Importing generated modules: the one helper the tests and tools use."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

_counter = itertools.count()


def import_generated(path: Path, name: str | None = None, *, register: bool = True):
    """Import the generated module at `path` under `name` (default: a fresh, unique name).

    With `register`, the module stays in sys.modules (pickling its output tuples needs it there);
    runners that import thousands of modules pass register=False so that each one can be freed."""
    name = name or f"onemodel_generated_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    if not register:
        sys.modules.pop(name, None)
    return module
