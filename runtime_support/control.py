"""Control-flow kernels: Loop and Scan drive a body function generated from the subgraph."""

from __future__ import annotations

import numpy as np

__all__ = ["loop", "scan", "scan_batched"]


def loop(body, trip_count, condition, *carried, scan_outputs=0, scan_dtypes=()):
    """ONNX Loop. `body(iteration_num, condition, *carried)` returns (condition, *carried,
    *scan_values); runs while the condition holds and fewer than `trip_count` iterations ran
    (either may be None: no bound). Returns the final carried values then each scan output,
    its per-iteration values stacked on a new first axis, as a tuple."""
    limit = None if trip_count is None else int(trip_count)
    keep_going = True if condition is None else bool(condition)
    scans: list[list] = [[] for _ in range(scan_outputs)]
    iteration = 0
    while keep_going and (limit is None or iteration < limit):
        results = body(np.array(iteration, dtype=np.int64), np.array(keep_going), *carried)
        keep_going = bool(results[0])
        carried = results[1 : 1 + len(carried)]
        for collected, value in zip(scans, results[1 + len(carried) :]):
            collected.append(value)
        iteration += 1
    stacked = []
    for collected, dtype in zip(scans, tuple(scan_dtypes) + (None,) * scan_outputs):
        if collected:
            stacked.append(np.stack(collected))
        else:
            stacked.append(np.zeros((0,), dtype=dtype or np.float32))
    return (*carried, *stacked)


def _state_count(values, num_scan_inputs: int, outputs: int) -> int:
    """How many of Scan's values are states, once the model's num_scan_inputs is one it can have
    (a huge one made a list per scan output: billions of them)."""
    if not 0 < num_scan_inputs <= len(values):
        raise ValueError(f"Scan: num_scan_inputs {num_scan_inputs} for {len(values)} inputs")
    state_count = len(values) - num_scan_inputs
    if outputs < state_count:
        raise ValueError(f"Scan: {outputs} outputs for {state_count} states")
    return state_count


def scan(
    body,
    *values,
    num_scan_inputs,
    outputs,
    scan_input_axes=None,
    scan_input_directions=None,
    scan_output_axes=None,
    scan_output_directions=None,
):
    """ONNX Scan (opset 9+). The first len(values) - num_scan_inputs values are states; the rest
    are scanned along their axis (backwards where the direction is 1). `body(*states, *elements)`
    returns (*states, *scan_elements). Returns the final states, then each scan output stacked
    along its axis (in reverse iteration order where its direction is 1), as a tuple."""
    state_count = _state_count(values, num_scan_inputs, outputs)
    states, inputs = list(values[:state_count]), values[state_count:]
    in_axes = [a % x.ndim for a, x in zip(scan_input_axes or [0] * len(inputs), inputs)]
    in_directions = scan_input_directions or [0] * len(inputs)
    length = inputs[0].shape[in_axes[0]] if inputs else 0
    scan_count = outputs - state_count
    collected: list[list] = [[] for _ in range(scan_count)]
    for step in range(length):
        elements = [
            np.take(x, length - 1 - step if d else step, axis=a)
            for x, a, d in zip(inputs, in_axes, in_directions)
        ]
        results = body(*states, *elements)
        states = list(results[:state_count])
        for bucket, value in zip(collected, results[state_count:]):
            bucket.append(value)
    out_axes = scan_output_axes or [0] * scan_count
    out_directions = scan_output_directions or [0] * scan_count
    stacked = []
    for bucket, axis, direction in zip(collected, out_axes, out_directions):
        if direction:
            bucket = bucket[::-1]
        rank = bucket[0].ndim + 1 if bucket else 1
        stacked.append(np.stack(bucket, axis=axis % rank) if bucket else np.zeros((0,)))
    return (*states, *stacked)


def scan_batched(body, sequence_lens, *values, num_scan_inputs, outputs, directions=None):
    """ONNX Scan of opset 8: axis 0 is a batch, axis 1 the sequence; each batch entry is scanned
    on its own for its sequence_lens entry (all of axis 1 when absent)."""
    state_count = _state_count(values, num_scan_inputs, outputs)
    batch = values[0].shape[0]
    length = values[state_count].shape[1] if len(values) > state_count else 0
    per_entry = []
    for b in range(batch):
        entry = [v[b] for v in values]
        if sequence_lens is not None:
            n = int(sequence_lens[b])
            entry = entry[:state_count] + [x[:n] for x in entry[state_count:]]
        results = scan(
            body,
            *entry,
            num_scan_inputs=num_scan_inputs,
            outputs=outputs,
            scan_input_directions=directions,
        )
        # an entry shorter than the sequence axis gets zeros after its last step
        per_entry.append(
            [*results[:state_count], *(_padded(y, length) for y in results[state_count:])]
        )
    return tuple(np.stack([r[i] for r in per_entry]) for i in range(outputs))


def _padded(scanned: np.ndarray, length: int) -> np.ndarray:
    """`scanned` (steps first) extended with zeros to `length` steps."""
    if scanned.shape[0] == length:
        return scanned
    padded = np.zeros((length, *scanned.shape[1:]), scanned.dtype)
    padded[: scanned.shape[0]] = scanned
    return padded
