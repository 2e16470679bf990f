# The onemodel-runtime distribution's version (runtime/pyproject.toml reads it); the compiler's
# distribution requires this exact version, and tests/test_packaging.py checks the two agree.
__version__ = "0.3.0"
