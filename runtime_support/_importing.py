"""Importing a generated module from its file: one way for the compiler's load_compiled, verify,
the session and the tests."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path


def import_module_file(path: Path, name: str) -> types.ModuleType:
    """Import the module at `path` as `name` (registered in sys.modules, so dataclasses and
    pickling see it); a module that fails while importing is unregistered and the error raised."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python module file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
