"""Operator emitters, one module per family. Importing this package registers all of them."""

from onemodel_compile.ops import (  # noqa: F401  (imported to register their emitters)
    activation,
    attention,
    control,
    conv,
    elementwise,
    fused,
    image,
    indexing,
    linalg,
    loss,
    microsoft,
    ml,
    normalization,
    pool,
    quantization,
    random,
    recurrent,
    reduction,
    sampling,
    sequence,
    signal,
    strings,
    tensor,
    training,
)
from onemodel_compile.ops.registry import emitter, lookup, registered

__all__ = ["emitter", "lookup", "registered"]
