"""onemodel-compile: an ahead-of-time compiler from ONNX models to standalone Python modules."""

from onemodel_compile.compiler import compile_model, generate, load_compiled
from onemodel_compile.errors import CompileError, ExactnessError, ModelError, UnsupportedError
from onemodel_compile.version import __version__

__all__ = [
    "CompileError",
    "ExactnessError",
    "ModelError",
    "UnsupportedError",
    "__version__",
    "compile_model",
    "generate",
    "load_compiled",
]
