"""Study (not a test): definitions of the exact float32 product, their cost and their accuracy.

    env -u OPENBLAS_CORETYPE .venv/bin/python -m tools.bench_exact_product [--budget S]

Candidates, each an exact computation in float64 (every BLAS partial sum an integer below 2**53):
- three: A and B in two w-bit slices each, A_0 B_0 + A_1 B_0 + A_0 B_1 (session 6's definition);
- two: A in two slices of s bits, B rounded once to its column's 24 bits, s + 24 + log2 k <= 53;
- one: A and B each rounded once to w = (53 - ceil(log2 k)) // 2 bits of its row's (column's)
  largest exponent, one product (w = 21 for blocks of k = 2048).
Times: median CPU time of the BLAS work alone against a float32 product, alternating, one thread.
Accuracy: on sampled entries against a long-double reference (float32 products are exact in long
double's 64 bits; the sum adds a few 2**-64), as |C - ref| / sum_k |a_ik b_kj| in units of
2**-24, for random and real-model weights, K from 16 to 25088 (normal; log-normal "wide-range"
with sigma 2 on both operands; transformer-like activations with 1% outlier features); float32
BLAS for comparison.
"""

from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from tools.bench_exact import FLOOR_SHAPES, alternate  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BLOCK = 2048


def width(k: int) -> int:
    return (53 - max(k - 1, 0).bit_length()) // 2


def scales(a, b):
    e = np.frexp(np.max(np.abs(a), axis=1, keepdims=True))[1]
    f = np.frexp(np.max(np.abs(b), axis=0, keepdims=True))[1]
    return e, f


def three(a, b):
    k = a.shape[1]
    w = width(min(k, BLOCK))
    e, f = scales(a, b)
    total = 0.0
    for s in range(0, k, BLOCK):
        ya = np.ldexp(a[:, s : s + BLOCK], w - e, dtype=np.float64)
        yb = np.ldexp(b[s : s + BLOCK], w - f, dtype=np.float64)
        a0 = np.trunc(ya)
        a1 = np.trunc((ya - a0) * 2.0**w)
        b0 = np.trunc(yb)
        b1 = np.trunc((yb - b0) * 2.0**w)
        total = total + ((a1 @ b0 + a0 @ b1) * 2.0**-w + a0 @ b0)
    return np.ldexp(total, e + f - 2 * w)


def two(a, b):
    k = a.shape[1]
    kb = min(k, BLOCK)
    s_bits = 53 - 24 - max(kb - 1, 0).bit_length()
    e, f = scales(a, b)
    total = 0.0
    for s in range(0, k, BLOCK):
        ya = np.ldexp(a[:, s : s + BLOCK], s_bits - e, dtype=np.float64)
        b0 = np.rint(np.ldexp(b[s : s + BLOCK], 24 - f, dtype=np.float64))
        a0 = np.trunc(ya)
        a1 = np.rint((ya - a0) * 2.0**s_bits)
        total = total + ((a1 @ b0) * 2.0**-s_bits + a0 @ b0)
    return np.ldexp(total, e + f - s_bits - 24)


def one(a, b):
    k = a.shape[1]
    w = width(min(k, BLOCK))
    e, f = scales(a, b)
    total = 0.0
    for s in range(0, k, BLOCK):
        a0 = np.rint(np.ldexp(a[:, s : s + BLOCK], w - e, dtype=np.float64))
        b0 = np.rint(np.ldexp(b[s : s + BLOCK], w - f, dtype=np.float64))
        total = total + a0 @ b0
    return np.ldexp(total, e + f - 2 * w)


def float32(a, b):
    return (a @ b).astype(np.float64)


METHODS = {"float32 BLAS": float32, "three (session 6)": three, "two": two, "one": one}


def real_weights(limit: int = 3):
    """(label, matrix K x N) from the project's exported models (torch's initialisation, not
    trained): the largest float32 matrices (Conv filters as (C * kernel, maps)) of each."""
    import onnx
    from onnx import numpy_helper

    found = []
    for name in ("bert_legacy_op14", "gpt2_legacy_op14", "vit_legacy_op17", "resnet_legacy_op14"):
        model = onnx.load(str(ROOT / "tests" / "real_models" / f"{name}.onnx"))
        mats = []
        for init in model.graph.initializer:
            w = numpy_helper.to_array(init)
            if w.dtype != np.float32 or w.ndim < 2 or w.size < 256:
                continue
            mats.append(w.reshape(w.shape[0], -1).T if w.ndim == 4 else w)
        for mat in sorted(mats, key=lambda m: -m.size)[:limit]:
            found.append((f"{name} {mat.shape[0]}x{mat.shape[1]}", mat))
    return found


def accuracy_rows(samples: int = 300):
    rng = np.random.default_rng(1)
    cases = []
    for k in (16, 144, 784, 1024, 4096, 25088):
        a = rng.standard_normal((64, k)).astype(np.float32)
        b = rng.standard_normal((k, 64)).astype(np.float32)
        cases.append((f"normal K={k}", a, b))
        a = (rng.standard_normal((64, k)) * np.exp(rng.standard_normal((64, k)) * 2)).astype(
            np.float32
        )
        b = (rng.standard_normal((k, 64)) * np.exp(rng.standard_normal((k, 64)) * 2)).astype(
            np.float32
        )
        cases.append((f"wide-range K={k}", a, b))
    for k in (768, 3072):  # transformer-like activations: 1% of the features 50 times larger
        a = rng.standard_normal((64, k))
        a[:, rng.choice(k, k // 100, replace=False)] *= 50
        b = rng.standard_normal((k, 64)) / np.sqrt(k)
        cases.append((f"outlier features K={k}", a.astype(np.float32), b.astype(np.float32)))
    for label, w in real_weights():
        k = w.shape[0]
        x = np.maximum(rng.standard_normal((32, k)), 0).astype(np.float32)  # ReLU-like input
        cases.append((label + " (relu input)", x, w[:, :64]))
    rows = []
    for label, a, b in cases:
        ii = rng.integers(0, a.shape[0], samples)
        jj = rng.integers(0, b.shape[1], samples)
        al, bl = a.astype(np.longdouble), b.astype(np.longdouble)
        ref = np.array([np.sum(al[i] * bl[:, j]) for i, j in zip(ii, jj)])
        mag = np.array([np.sum(np.abs(al[i] * bl[:, j])) for i, j in zip(ii, jj)])
        row = {"case": label, "K": a.shape[1]}
        for name, method in METHODS.items():
            c = method(a, b)[ii, jj]
            err = np.abs(c.astype(np.longdouble) - ref) / np.where(mag > 0, mag, 1)
            rounded = c.astype(np.float32).astype(np.longdouble)
            exact32 = ref.astype(np.float64).astype(np.float32).astype(np.longdouble)
            row[name] = (
                float(np.max(err)) * 2**24,
                float(np.median(err)) * 2**24,
                float(np.mean(rounded == exact32)),
            )
        rows.append(row)
    return rows


# The bench models' dominant products, as bench_exact's floor table times them.
SHAPES = FLOOR_SHAPES


def _sides(m, a32, b32, a_stacked, a0, b0, b1, b24, a_two) -> dict:
    """The BLAS work of each definition, on integer-valued operands of its slice widths."""
    return {
        "float32": lambda: a32 @ b32,
        "three": lambda: (a_stacked @ b0, a_stacked[:m] @ b1),
        "two": lambda: a_two @ b24,
        "one": lambda: a0 @ b0,
    }


def cost_rows(budget: float):
    rng = np.random.default_rng(0)
    rows = []
    for label, m, k, n in SHAPES:
        a32, b32 = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n)))
        ints = lambda shape, bits: np.trunc(rng.uniform(-(2.0**bits), 2.0**bits, shape))  # noqa
        a_stacked, a0, b0, b1, b24 = (
            ints((2 * m, k), 21),
            ints((m, k), 21),
            ints((k, n), 21),
            ints((k, n), 21),
            ints((k, n), 24),
        )
        a_two = ints((2 * m, k), 18)
        sides = _sides(m, a32, b32, a_stacked, a0, b0, b1, b24, a_two)
        med = alternate(sides, budget)
        rows.append((label, (m, k, n), med))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=2.0, help="seconds per shape")
    parser.add_argument("--skip-cost", action="store_true")
    parser.add_argument("--skip-accuracy", action="store_true")
    args = parser.parse_args()
    print(f"load: {os.getloadavg()}")
    if not args.skip_cost:
        print("| product | M x K x N | float32 (ms) | three | two | one | ratios three, two, one |")
        print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
        for label, (m, k, n), med in cost_rows(args.budget):
            f = med["float32"]
            print(
                f"| {label} | {m} x {k} x {n} | {f * 1e3:.3f} | {med['three'] * 1e3:.3f} | "
                f"{med['two'] * 1e3:.3f} | {med['one'] * 1e3:.3f} | "
                f"{med['three'] / f:.1f}, {med['two'] / f:.1f}, {med['one'] / f:.1f} |"
            )
    if not args.skip_accuracy:
        names = list(METHODS)
        print(
            "\nerror / sum|a b| in units of 2**-24: max, median; share of entries equal to "
            "the correctly rounded float32 product"
        )
        print("| case | K | " + " | ".join(names) + " |")
        print("| --- | ---: | " + " | ".join("---" for _ in names) + " |")
        for row in accuracy_rows():
            cells = [f"{row[n][0]:.2g}, {row[n][1]:.2g}; {row[n][2]:.0%}" for n in names]
            print(f"| {row['case']} | {row['K']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
