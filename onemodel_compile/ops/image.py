"""ImageDecoder (opset 20). Kernel in runtime_support/image.py, through Pillow (the runtime's
`image` extra).

Never folded: decoding needs Pillow, which the machine that compiles need not have (a module that
runs where Pillow is missing raises naming the extra), and a decoded image is large. Exact: see
runtime_support/image.py and docs/decisions.md.
"""

from __future__ import annotations

from onemodel_compile.errors import CompileError
from onemodel_compile.ops import pyir
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import call
from onemodel_compile.ops.registry import emitter
from runtime_support.image import PIXEL_FORMATS


@emitter("ImageDecoder", since=20, exact=True, foldable=False)
def image_decoder(view: NodeView) -> pyir.Expr:
    pixel_format = view.attr("pixel_format", "RGB")
    if pixel_format not in PIXEL_FORMATS:
        raise CompileError(
            f"{view.node.label}: unknown pixel_format {pixel_format!r} "
            f"(one of {', '.join(PIXEL_FORMATS)})"
        )
    return call("rt.image_decoder", view.inputs[0], pixel_format=pixel_format)
