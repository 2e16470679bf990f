"""What a compile did, for `onemodel-compile --verbose`: operators and counts, nodes folded into
constants, absorbed into shape arithmetic or fused by the fast variant's rewrites, weight bytes,
and the time of each stage. compiler.generate fills it in when given one; the stage it is in is
readable while it runs (the command line's progress line reads it from another thread)."""

from __future__ import annotations

import collections
import contextlib
import time
from dataclasses import dataclass, field


@dataclass
class CompileReport:
    stages: dict[str, float] = field(default_factory=dict)  # stage -> seconds, in order
    current: str = ""  # the stage running now ("" before and after)
    operators: collections.Counter = field(default_factory=collections.Counter)
    nodes: int = 0  # in the main graph
    run_time_steps: int = 0  # statements of the module's main graph
    folded: int = 0  # computed at compile time: constants
    shape_arithmetic: int = 0  # computed in Python ints from dims
    fused: int = 0  # absorbed by a fast-variant rewrite
    weight_bytes: int = 0  # the weights file's size (0: every constant inline)
    inline_constants: int = 0
    source_lines: int = 0

    @contextlib.contextmanager
    def stage(self, name: str):
        self.current = name
        started = time.perf_counter()
        try:
            yield
        finally:
            self.stages[name] = self.stages.get(name, 0.0) + time.perf_counter() - started
            self.current = ""

    def note_graph(self, graph, resolved) -> None:
        """Count the main graph's nodes by what became of them."""
        nodes = graph.graph.nodes
        self.nodes = len(nodes)
        self.operators = collections.Counter(
            f"{node.domain}.{node.op_type}" if node.domain else node.op_type for node in nodes
        )
        at_run_time, fused = set(), set()
        for step in resolved.steps:
            at_run_time.add(id(step.node))
            for node in getattr(step, "fused", ()):
                fused.add(id(node))
            head = getattr(step, "head", None)
            if head is not None:
                fused.add(id(head))
        shape = {id(node) for node in resolved.shape_nodes.values()} - at_run_time - fused
        self.run_time_steps = len(resolved.steps)
        self.fused = len(fused - at_run_time)
        self.shape_arithmetic = len(shape)
        self.folded = sum(1 for n in nodes if id(n) not in at_run_time | fused | shape)

    def note_emitted(self, emitted) -> None:
        self.weight_bytes = len(emitted.weights) if emitted.weights is not None else 0
        self.source_lines = emitted.source.count("\n")

    def lines(self) -> list[str]:
        """The report as the command line prints it."""
        total = sum(self.stages.values())
        stages = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.stages.items())
        counts = ", ".join(f"{op} {n}" for op, n in sorted(self.operators.items()))
        return [
            f"operators ({self.nodes} nodes): {counts or 'none'}",
            f"run time: {self.run_time_steps} statements; folded into constants: {self.folded}; "
            f"shape arithmetic: {self.shape_arithmetic}; fused: {self.fused}",
            f"weights: {self.weight_bytes} bytes"
            + ("" if self.weight_bytes else " (every constant inline)")
            + f"; module: {self.source_lines} lines",
            f"time: {total:.2f} s ({stages})",
        ]
