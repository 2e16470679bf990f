"""Kernels of the ai.onnx.ml domain: the operators scikit-learn, LightGBM and XGBoost models use.

Semantics are the ONNX ML specification's, with the details it leaves open settled by onnxruntime
1.31.1's CPU kernels (docs/ml-domain.md lists them): scores in float32 whatever the input type,
onnxruntime's post transforms (its logistic, softmax, "softmax zero" and probit approximation), its
binary-classifier conventions and its label tie-breaking (the first maximum wins).

Every kernel is vectorized over the batch. Tree ensembles walk all (row, tree) pairs one level at
a time with array indexing, then add the leaves' weights tree after tree in tree order (the order
onnxruntime uses on one thread, so the sums are its bits too). The compiler hands the kernels
their attributes as literals (tuples): `_constant` turns each into an array once and keeps it,
keyed by the literal object, so a call does no per-node Python work.

Where a kernel takes `exact=True` (the exact variant), its transcendental functions are the
library's own (runtime_support.exact_math) and its products and sums run in a fixed order, so its
bits depend only on the input's.

Representations: a string tensor is a numpy object array of Python str; a map is a dict; ZipMap's
sequence of maps is a list of dicts, one per row, with Python float values.
"""

from __future__ import annotations

import re

import numpy as np

from runtime_support._dtypes import dtype_from_name
from runtime_support.exact import exact_matmul, exact_sum
from runtime_support.exact_math import exact_exp, exact_log, exact_pow, exact_tanh

__all__ = [
    "array_feature_extractor",
    "binarizer",
    "cast_map",
    "category_mapper",
    "dict_vectorizer",
    "feature_vectorizer",
    "imputer",
    "label_encoder",
    "linear_classifier",
    "linear_regressor",
    "normalizer",
    "one_hot_encoder",
    "scaler",
    "svm_classifier",
    "svm_regressor",
    "tree_ensemble",
    "tree_ensemble_classifier",
    "zip_map",
]

_F32 = np.float32
_ONE = _F32(1.0)
_OBJECT = np.dtype(object)


# --- literals turned into arrays once -------------------------------------------------------------

_CONSTANTS: dict[int, tuple[object, object]] = {}
_CONSTANTS_KEPT = 256


def _constant(value, build=None):
    """`build(value)` (default: np.asarray), computed once per literal object: generated code
    passes its attributes as constant tuples, the same object on every call. The entry keeps the
    literal alive, so its id cannot be reused while it is cached."""
    key = id(value)
    hit = _CONSTANTS.get(key)
    if hit is not None and hit[0] is value:
        return hit[1]
    made = np.asarray(value) if build is None else build(value)
    if len(_CONSTANTS) >= _CONSTANTS_KEPT:
        _CONSTANTS.pop(next(iter(_CONSTANTS)))
    _CONSTANTS[key] = (value, made)
    return made


def _floats(value, dtype=np.float32) -> np.ndarray:
    return _constant(value, lambda v: np.asarray(v, dtype=dtype))


def _labels(value) -> np.ndarray:
    """Class labels: an int64 array, or an object array of str."""

    def build(v):
        if len(v) and isinstance(v[0], str):
            array = np.empty(len(v), dtype=object)
            array[:] = list(v)
            return array
        return np.asarray(v, dtype=np.int64)

    return _constant(value, build)


def _strings(values) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = list(values)
    return array


def _rows(X) -> np.ndarray:
    """X as [N, C] (a 1-D X is one row), as onnxruntime reads the ml operators' inputs."""
    X = np.asarray(X)
    if X.ndim == 0:
        raise ValueError("input must have at least one dimension")
    return X.reshape(1, -1) if X.ndim == 1 else X.reshape(X.shape[0], -1)


def _as_float32(X) -> np.ndarray:
    """onnxruntime converts every numeric input of the linear, SVM and scaling kernels to float."""
    return np.asarray(X).astype(_F32, copy=False)


# --- post transforms (onnxruntime's float32 formulas) --------------------------------------------


def _exp(exact: bool):
    return exact_exp if exact else np.exp


def _logistic(x: np.ndarray, exact: bool) -> np.ndarray:
    """1 / (1 + e**-|x|), mirrored for negative x: onnxruntime's ComputeLogistic, in float32."""
    x = x.astype(_F32, copy=False)
    v = _ONE / (_ONE + _exp(exact)(-np.abs(x)))
    return np.where(x < 0, _ONE - v, v)


_SQRT2 = _F32(np.sqrt(2.0))
_ERFINV_A = _F32(2.0) / (_F32(np.pi) * _F32(0.147))
_ERFINV_B = _ONE / _F32(0.147)


def _probit(x: np.ndarray, exact: bool) -> np.ndarray:
    """sqrt(2) * erfinv(2x - 1) with onnxruntime's erfinv approximation (Winitzki's, a = 0.147),
    in float32."""
    log = exact_log if exact else np.log
    x = x.astype(_F32, copy=False)
    t = _F32(2.0) * x - _ONE
    sign = np.where(t < 0, _F32(-1.0), _ONE)
    w = (_ONE - t) * (_ONE + t)
    with np.errstate(divide="ignore", invalid="ignore"):
        lw = log(w)
        v = _ERFINV_A + _F32(0.5) * lw
        v2 = _ERFINV_B * lw
        v3 = -v + np.sqrt(v * v - v2)
        return _SQRT2 * (sign * np.sqrt(v3))


def _softmax(x: np.ndarray, exact: bool) -> np.ndarray:
    """Per row: e = exp(x - max), summed column by column in float32, e / sum (onnxruntime)."""
    x = x.astype(_F32, copy=True)
    top = x.max(axis=1, keepdims=True)
    e = _exp(exact)(x - top)
    total = np.zeros((x.shape[0], 1), dtype=_F32)
    for column in range(x.shape[1]):
        total += e[:, column : column + 1]
    return e / total


def _softmax_zero(x: np.ndarray, exact: bool) -> np.ndarray:
    """Softmax over the non-zero scores (|x| > 1e-7); the others become x * exp(-max), which
    keeps a zero zero (onnxruntime's SOFTMAX_ZERO)."""
    x = x.astype(_F32, copy=True)
    exp = _exp(exact)
    top = x.max(axis=1, keepdims=True)
    nonzero = (x > _F32(1e-7)) | (x < _F32(-1e-7))
    e = np.where(nonzero, exp(x - top), x * exp(-top))
    total = np.zeros((x.shape[0], 1), dtype=_F32)
    for column in range(x.shape[1]):
        total += np.where(nonzero[:, column : column + 1], e[:, column : column + 1], _F32(0))
    return e / total


_TRANSFORMS = {
    "NONE": lambda x, exact: x.astype(_F32, copy=False),
    "LOGISTIC": _logistic,
    "SOFTMAX": _softmax,
    "SOFTMAX_ZERO": _softmax_zero,
    "PROBIT": _probit,
}


def _transform(scores: np.ndarray, post_transform: str, exact: bool) -> np.ndarray:
    if post_transform not in _TRANSFORMS:
        raise ValueError(f"unknown post_transform {post_transform!r}")
    return _TRANSFORMS[post_transform](scores, exact)


def _update_scores(scores, post_transform, second_class: int | None, exact: bool) -> np.ndarray:
    """onnxruntime's batched score update of the linear and SVM classifiers and regressors:
    several scores per row are transformed; a single score is only probit-transformed, or, with
    `second_class` set, expanded to two columns: [1 - p, p] (0, 1; p = logistic(s) under
    LOGISTIC, else s) or, for 2 and 3, [logistic(-s), logistic(s)] under LOGISTIC and [-s, s]
    otherwise."""
    if scores.shape[1] != 1:
        return _transform(scores, post_transform, exact)
    if post_transform == "PROBIT":
        return _probit(scores, exact)
    if second_class is None:
        return scores.astype(_F32, copy=False)
    s = scores.astype(_F32, copy=False)
    if second_class in (0, 1):
        if post_transform == "LOGISTIC":
            s = _logistic(s, exact)
        return np.concatenate([_ONE - s, s], axis=1)
    if post_transform == "LOGISTIC":
        return np.concatenate([_logistic(-s, exact), _logistic(s, exact)], axis=1)
    return np.concatenate([-s, s], axis=1)


# --- simple transformers ---------------------------------------------------------------------------


def array_feature_extractor(X, indices):
    """X's elements at `indices` along its last axis; a 1-D X gives one row [1, K]
    (onnxruntime). Indices outside the last axis are an error."""
    X = np.asarray(X)
    indices = np.asarray(indices, dtype=np.int64).reshape(-1)
    size = X.shape[-1] if X.ndim else 0
    if indices.size and (indices.min() < 0 or indices.max() >= size):
        raise IndexError(f"ArrayFeatureExtractor: index out of range for a last axis of {size}")
    if X.ndim == 1:
        return X[indices].reshape(1, -1)
    return X[..., indices]


def binarizer(X, *, threshold):
    """1 where X > threshold, else 0, in X's type (NaN gives 0)."""
    X = np.asarray(X)
    return np.where(X > X.dtype.type(threshold), X.dtype.type(1), X.dtype.type(0))


def scaler(X, *, offset, scale):
    """(float32(X) - offset) * scale, per last-axis feature (or one value for all), float32."""
    X = _as_float32(X)
    return (X - _floats(offset)) * _floats(scale)


def imputer(X, *, imputed, replaced):
    """X with every element equal to `replaced` (NaN matches NaN) set to `imputed` (one value,
    or one per last-axis feature)."""
    X = np.asarray(X)
    values = _constant(imputed, lambda v: np.asarray(v, dtype=X.dtype))
    if isinstance(replaced, float) and np.isnan(replaced):
        mask = np.isnan(X) if X.dtype.kind == "f" else np.zeros(X.shape, dtype=bool)
    else:
        mask = X == X.dtype.type(replaced)
    return np.where(mask, values if values.size > 1 else values.reshape(()), X)


def normalizer(X, *, norm):
    """Each row over axis 1 (a 1-D X is one row) divided by its max (MAX), its sum of |x| (L1),
    or sqrt(x*x / sum of squares) with x's sign (L2); a zero divisor leaves the row as float32(X).
    The sums run over axis 1 in order, in float32, as onnxruntime's: exact."""
    X = np.asarray(X)
    wide = X.reshape(1, -1) if X.ndim == 1 else X
    values = wide.astype(_F32)
    axis_length = wide.shape[1]
    index = [slice(None)] * wide.ndim

    def column(data, k):
        index[1] = slice(k, k + 1)
        return data[tuple(index)]

    if norm == "MAX":
        divisor = values.max(axis=1, keepdims=True) if axis_length else None
        if divisor is None:
            return values.reshape(X.shape)
        result = np.where(divisor != 0, values / np.where(divisor != 0, divisor, _ONE), values)
    elif norm == "L1":
        divisor = np.zeros_like(column(values, 0))
        for k in range(axis_length):
            divisor += np.abs(column(wide, k)).astype(_F32)
        result = np.where(divisor != 0, values / np.where(divisor != 0, divisor, _ONE), values)
    elif norm == "L2":
        squares = (wide * wide).astype(_F32)
        divisor = np.zeros_like(column(values, 0))
        for k in range(axis_length):
            divisor += column(squares, k)
        safe = np.where(divisor != 0, divisor, _ONE)
        root = np.sqrt(squares / safe)
        result = np.where(divisor != 0, np.where(wide < 0, -root, root), values)
    else:
        raise ValueError(f"Normalizer: unknown norm {norm!r}")
    return result.reshape(X.shape)


def feature_vectorizer(*inputs, inputdimensions):
    """The inputs' rows side by side as float32, input i cut or zero-padded to inputdimensions[i]
    columns; a 1-D input is one row."""
    parts = []
    for value, width in zip(inputs, inputdimensions):
        rows = _rows(value).astype(_F32)
        if rows.shape[1] >= width:
            parts.append(rows[:, :width])
        else:
            pad = np.zeros((rows.shape[0], width - rows.shape[1]), dtype=_F32)
            parts.append(np.concatenate([rows, pad], axis=1))
    if not parts:
        return np.zeros((1, 0), dtype=_F32)
    return np.concatenate(parts, axis=1)


# --- encoders ---------------------------------------------------------------------------------------


def _lookup(X: np.ndarray, keys: np.ndarray, values: np.ndarray, default) -> np.ndarray:
    """values[i] where X equals keys[i] (the first of equal keys wins, as onnxruntime's maps keep
    the first; the specification of LabelEncoder-4 says the last; NaN keys match NaN), else
    `default`; vectorized through a sorted copy of the keys."""
    X = np.asarray(X)
    result = np.empty(X.shape, dtype=values.dtype)
    result[...] = default
    if not len(keys) or not X.size:
        return result
    float_keys = keys.dtype.kind == "f"
    nan_keys = np.isnan(keys) if float_keys else np.zeros(len(keys), dtype=bool)
    usable = np.flatnonzero(~nan_keys)
    _, first = np.unique(keys[usable], return_index=True)  # sorted, first occurrences
    order = usable[first]
    sorted_keys, sorted_values = keys[order], values[order]
    flat = X.reshape(-1)
    position = np.searchsorted(sorted_keys, flat)
    position = np.minimum(position, len(sorted_keys) - 1)
    found = sorted_keys[position] == flat
    out = result.reshape(-1)
    out[found] = sorted_values[position[found]]
    if float_keys and nan_keys.any():
        out[np.isnan(flat)] = values[np.flatnonzero(nan_keys)[0]]
    return result


def label_encoder(X, *, keys, values, default, dtype):
    """Each element of X mapped through keys -> values (`default` when absent); `dtype` names the
    output type ("int64", "float32", "string", ...)."""
    X = np.asarray(X)
    out_dtype = _OBJECT if dtype == "string" else dtype_from_name(dtype)
    key_array = _constant(
        keys, lambda v: np.asarray(v, dtype=X.dtype) if X.dtype != _OBJECT else _strings(v)
    )
    value_array = _constant(
        values, lambda v: _strings(v) if out_dtype == _OBJECT else np.asarray(v, dtype=out_dtype)
    )
    return _lookup(X, key_array, value_array, default)


def category_mapper(X, *, cats_strings, cats_int64s, default_string, default_int64):
    """Strings to int64 (cats_strings[i] -> cats_int64s[i], else default_int64) or int64 to
    strings (else default_string), by X's type."""
    X = np.asarray(X)
    strings = _constant(cats_strings, _strings)
    ints = _constant(cats_int64s, lambda v: np.asarray(v, dtype=np.int64))
    if X.dtype == _OBJECT:
        return _lookup(X, strings, ints, default_int64)
    return _lookup(X.astype(np.int64), ints, strings, default_string)


def one_hot_encoder(X, *, categories, zeros):
    """X's shape plus an axis of len(categories): 1.0 at the category of each element, float32.
    Numeric inputs are truncated to int64 first; an unknown value gives all zeros, or an error
    when zeros=0."""
    X = np.asarray(X)
    if X.dtype == _OBJECT:
        cats = _constant(categories, _strings)
    else:
        cats = _constant(categories, lambda v: np.asarray(v, dtype=np.int64))
        X = X.astype(np.int64)
    index = _lookup(X, cats, np.arange(len(cats), dtype=np.int64), -1)
    if not zeros and (index < 0).any():
        raise ValueError("OneHotEncoder: a value is not among the categories (zeros=0)")
    return (index[..., None] == np.arange(len(cats))).astype(_F32)


def _stof(text: str) -> float:
    """C's strtof prefix parsing, as std::stof: leading spaces, the longest number prefix."""
    match = re.match(
        r"\s*([+-]?(?:inf(?:inity)?|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?))", text, re.I
    )
    if match is None:
        raise ValueError(f"CastMap: cannot read a number from {text!r}")
    return float(np.float32(float(match.group(1))))


def _stoll(text: str) -> int:
    match = re.match(r"\s*([+-]?\d+)", text)
    if match is None:
        raise ValueError(f"CastMap: cannot read an integer from {text!r}")
    return int(match.group(1))


def _to_string(value) -> str:
    return "%f" % float(np.float32(value))  # std::to_string of a float


def cast_map(M, *, cast_to, map_form, max_map):
    """A map of int64 keys to a [1, n] tensor of its values in key order: DENSE (n = the map's
    size) or SPARSE (n = max_map, value i at position i, missing ones 0, or "0.f" for strings).
    cast_to: TO_FLOAT (strings read as C's stof), TO_INT64 (truncation; stoll for strings),
    TO_STRING (floats written as C++'s to_string)."""
    keys = sorted(M)
    strings_in = bool(keys) and isinstance(M[keys[0]], str)
    convert, dtype, pad = {
        "TO_FLOAT": (_stof if strings_in else (lambda v: np.float32(v)), _F32, 0.0),
        "TO_INT64": (_stoll if strings_in else (lambda v: int(np.float32(v))), np.int64, 0),
        "TO_STRING": ((lambda v: v) if strings_in else _to_string, _OBJECT, "0.f"),
    }[cast_to]
    if map_form == "DENSE":
        values = [convert(M[k]) for k in keys]
    else:
        if keys and keys[0] < 0:
            raise ValueError(f"CastMap: negative key {keys[0]} in a SPARSE map")
        values = [pad] * int(max_map)
        for k in keys:
            if k < max_map:
                values[k] = convert(M[k])
    out = np.empty((1, len(values)), dtype=dtype)
    out[0, :] = values
    return out


def dict_vectorizer(M, *, vocabulary, dtype):
    """[1, len(vocabulary)]: M's value for each vocabulary key, 0 (or "") where M lacks it."""
    out_dtype = _OBJECT if dtype == "string" else dtype_from_name(dtype)
    out = np.zeros((1, len(vocabulary)), dtype=out_dtype)
    if out_dtype == _OBJECT:
        out[...] = ""
    for i, key in enumerate(vocabulary):
        if key in M:
            out[0, i] = M[key]
    return out


def zip_map(X, *, labels):
    """One dict per row of X, {label: score} with Python floats, keys in ascending order (a list of
    dicts)."""
    X = np.asarray(X, dtype=_F32)
    keys = list(labels)
    if X.ndim != 2 or X.shape[1] != len(keys):
        raise ValueError(
            f"ZipMap: input of shape {list(X.shape)} does not have one column per label "
            f"({len(keys)})"
        )
    order = sorted(range(len(keys)), key=keys.__getitem__)  # onnxruntime's maps are sorted
    keys = [keys[i] for i in order]
    return [dict(zip(keys, row)) for row in X[:, order].tolist()]


# --- linear models -----------------------------------------------------------------------------------


def _linear_scores(X, coefficients, intercepts, targets, exact, alpha=None):
    """float32(X) @ coefficients.T + intercepts, float32 (the product exact_matmul's with
    `exact`)."""
    X = _rows(_as_float32(X))
    coef = _floats(coefficients).reshape(targets, -1) if targets else _floats(coefficients)
    product = exact_matmul(X, coef.T) if exact else X @ coef.T
    if len(intercepts):
        product = product + _floats(intercepts)
    return product.astype(_F32, copy=False)


def linear_classifier(X, *, coefficients, intercepts, labels, post_transform, exact=False):
    """(label, scores). Scores = float32(X) @ W.T + b, one column per row of W. Several columns:
    the label is that of the first largest score. One column: labels[1] where the score is
    positive, else labels[0] (with two labels; else 1 and 0, or "1" and "0"), and two labels
    expand the scores to [1 - s, s]. Then the post transform (onnxruntime's rules, see
    _update_scores)."""
    label_array = _labels(labels)
    targets = len(intercepts) if len(intercepts) else max(1, len(label_array))
    scores = _linear_scores(X, coefficients, intercepts, targets, exact)
    if scores.shape[1] == 1:
        strings = label_array.dtype == _OBJECT
        if len(label_array) == 2:
            positive, negative = label_array[1], label_array[0]
        else:
            positive, negative = ("1", "0") if strings else (1, 0)
        label = np.where(scores[:, 0] > 0, positive, negative)
        label = label.astype(label_array.dtype)
        second = 1 if len(label_array) == 2 else None
    else:
        label = label_array[np.argmax(scores, axis=1)]
        second = None
    if post_transform == "NONE" and second is None:
        return label, scores
    return label, _update_scores(scores, post_transform, second, exact)


def linear_regressor(X, *, coefficients, intercepts, targets, post_transform, exact=False):
    """float32(X) @ W.T + b, [N, targets], then the post transform (PROBIT alone for one
    target, as onnxruntime)."""
    scores = _linear_scores(X, coefficients, intercepts, targets, exact)
    if post_transform == "NONE":
        return scores
    return _update_scores(scores, post_transform, None, exact)


# --- support vector machines -------------------------------------------------------------------------


def _svm_kernel(X, vectors, kernel_type, gamma, coef0, degree, exact):
    """K[n, v] = k(X[n], vectors[v]) in float32: LINEAR x.v, POLY (gamma x.v + coef0)**degree,
    RBF exp(-gamma |x - v|**2) (the squares summed feature by feature), SIGMOID
    tanh(gamma x.v + coef0)."""
    gamma, coef0 = _F32(gamma), _F32(coef0)
    if kernel_type == "RBF":
        total = np.zeros((X.shape[0], vectors.shape[0]), dtype=_F32)
        for feature in range(X.shape[1]):
            d = X[:, feature : feature + 1] - vectors[:, feature][None, :]
            total += d * d
        return _exp(exact)(-gamma * total)
    dot = exact_matmul(X, vectors.T) if exact else X @ vectors.T
    if kernel_type == "LINEAR":
        return dot
    dot = gamma * dot + coef0
    if kernel_type == "POLY":
        if degree == 2:
            return dot * dot
        if degree == 3:
            return dot * dot * dot
        return exact_pow(dot, np.float32(degree)) if exact else np.power(dot, _F32(degree))
    if kernel_type == "SIGMOID":
        return exact_tanh(dot) if exact else np.tanh(dot)
    raise ValueError(f"SVM: unknown kernel_type {kernel_type!r}")


def _sum64(products: np.ndarray, exact: bool) -> np.ndarray:
    """Row sums of float32 products in float64 (onnxruntime accumulates them in double)."""
    wide = products.astype(np.float64)
    return exact_sum(wide, axis=1, dtype=np.float64) if exact else wide.sum(axis=1)


def _multiclass_probability(r: np.ndarray) -> np.ndarray:
    """Pairwise coupling of the pairwise probabilities r [N, C, C] into class probabilities
    [N, C] (Wu, Lin and Weng's method 2, as libsvm and onnxruntime iterate it, in float32, at
    most 100 rounds, each row stopping when its error is below 0.005 / C)."""
    N, C = r.shape[:2]
    Q = np.zeros((N, C, C), dtype=_F32)
    for i in range(C):
        for j in range(i):
            Q[:, i, i] += r[:, j, i] * r[:, j, i]
            Q[:, i, j] = Q[:, j, i]
        for j in range(i + 1, C):
            Q[:, i, i] += r[:, j, i] * r[:, j, i]
            Q[:, i, j] = -r[:, j, i] * r[:, i, j]
    p = np.full((N, C), _ONE / _F32(C), dtype=_F32)
    eps = _F32(0.005) / _F32(C)
    active = np.ones(N, dtype=bool)
    two = _F32(2.0)
    for _ in range(100):
        Qp = np.zeros((N, C), dtype=_F32)
        pQp = np.zeros(N, dtype=_F32)
        for i in range(C):
            for j in range(C):
                Qp[:, i] += Q[:, i, j] * p[:, j]
            pQp += p[:, i] * Qp[:, i]
        error = np.zeros(N, dtype=_F32)
        for i in range(C):
            error = np.maximum(error, np.abs(Qp[:, i] - pQp))
        active &= ~(error < eps)
        if not active.any():
            break
        for i in range(C):
            diff = (-Qp[:, i] + pQp) / Q[:, i, i]
            new_p = p.copy()
            new_p[:, i] = p[:, i] + diff
            grown = _ONE + diff
            new_pQp = (pQp + diff * (diff * Q[:, i, i] + two * Qp[:, i])) / grown / grown
            new_Qp = (Qp + diff[:, None] * Q[:, i, :]) / grown[:, None]
            new_p = new_p / grown[:, None]
            p = np.where(active[:, None], new_p, p)
            Qp = np.where(active[:, None], new_Qp, Qp)
            pQp = np.where(active, new_pQp, pQp)
    return p


def svm_classifier(
    X,
    *,
    labels,
    vectors_per_class,
    support_vectors,
    coefficients,
    rho,
    prob_a,
    prob_b,
    kernel_type,
    kernel_params,
    post_transform,
    exact=False,
):
    """(label, scores) of a support vector classifier (onnxruntime's SVMClassifier).

    Without support vectors (liblinear), scores = float32(X) @ W.T + rho[0] and the label is the
    class of the first largest score. Otherwise every pair i < j of classes is scored,
    sum of coefficient * kernel over both classes' support vectors (float32 products summed in
    float64) + rho, and votes for i when positive, else j; the label is the class with the most
    votes (the first on a tie). With prob_a and prob_b the pair scores become probabilities
    (Platt scaling, clamped to [1e-7, 1 - 1e-7]) coupled into one per class, and the label is the
    first most probable class. Two classes without probabilities give scores [-s, s] (NONE) or
    [1 - s, s]; the binary label follows onnxruntime's ChooseClass."""
    label_array = _labels(labels)
    X = _rows(_as_float32(X))
    n = X.shape[0]
    classes = len(label_array) if len(label_array) else 1
    gamma, coef0, degree = (list(kernel_params) + [0.0, 0.0, 0.0])[:3]
    coef = _floats(coefficients)
    all_positive = bool((coef >= 0).all())
    have_proba = len(prob_a) > 0
    pairs = [(i, j) for i in range(classes - 1) for j in range(i + 1, classes)]
    max_weight = np.zeros(n, dtype=_F32)
    second = None
    if not len(vectors_per_class) or sum(vectors_per_class) == 0:  # liblinear
        W = coef.reshape(classes, -1)
        scores = (exact_matmul(X, W.T) if exact else X @ W.T) + _F32(rho[0])
        scores = scores.astype(_F32)
        top = np.argmax(scores, axis=1)
        max_weight = scores[np.arange(n), top]
    else:
        counts = list(vectors_per_class)
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        vectors = _floats(support_vectors).reshape(int(starts[-1]), -1)
        K = _svm_kernel(X, vectors, kernel_type, gamma, coef0, degree, exact)
        coef = coef.reshape(classes - 1, -1)
        rho_array = _floats(rho)
        pair_scores = np.zeros((n, len(pairs)), dtype=_F32)
        votes = np.zeros((n, classes), dtype=np.int64)
        for index, (i, j) in enumerate(pairs):
            si, ei, sj, ej = starts[i], starts[i + 1], starts[j], starts[j + 1]
            products = np.concatenate(
                [coef[j - 1, si:ei] * K[:, si:ei], coef[i, sj:ej] * K[:, sj:ej]], axis=1
            )
            total = _sum64(products, exact) + np.float64(rho_array[index])
            pair_scores[:, index] = total.astype(_F32)
            winner = np.where(total > 0, i, j)
            votes[np.arange(n), winner] += 1
        if have_proba:
            A, B = _floats(prob_a), _floats(prob_b)
            r = np.zeros((n, classes, classes), dtype=_F32)
            for index, (i, j) in enumerate(pairs):
                value = _ONE - _logistic(pair_scores[:, index] * A[index] + B[index], exact)
                value = np.minimum(np.maximum(value, _F32(1e-7)), _ONE - _F32(1e-7))
                r[:, i, j] = value
                r[:, j, i] = _ONE - value
            scores = _multiclass_probability(r)
            top = np.argmax(scores, axis=1)
            max_weight = scores[np.arange(n), top]
        else:
            scores = pair_scores
            top = np.argmax(votes, axis=1)
            if classes <= 2:
                second = 2 if post_transform == "NONE" else 0
    if len(pairs) == 1:  # two classes: onnxruntime's ChooseClass
        if len(label_array) == 2:
            if have_proba:
                label = label_array[top]
            else:
                positive = (all_positive & (max_weight >= 0.5)) | (
                    (max_weight > 0) & (not all_positive)
                )
                label = np.where(positive, label_array[1], label_array[top])
        else:
            strings = label_array.dtype == _OBJECT
            positive, negative = ("1", "0") if strings else (1, 0)
            label = np.where(max_weight > 0, positive, negative)
        label = np.asarray(label).astype(label_array.dtype if len(label_array) else np.int64)
    else:
        label = label_array[top]
    return label, _update_scores(scores, post_transform, second, exact)


def svm_regressor(
    X,
    *,
    n_supports,
    support_vectors,
    coefficients,
    rho,
    one_class,
    kernel_type,
    kernel_params,
    exact=False,
):
    """[N, 1]: sum of coefficient * kernel over the support vectors + rho[0] (float32), or,
    without support vectors, float32(X) @ W + rho[0]; one_class maps it to +1 / -1 (> 0 or not).
    onnxruntime applies no post transform."""
    X = _rows(_as_float32(X))
    gamma, coef0, degree = (list(kernel_params) + [0.0, 0.0, 0.0])[:3]
    coef = _floats(coefficients)
    if n_supports > 0:
        vectors = _floats(support_vectors).reshape(int(n_supports), -1)
        K = _svm_kernel(X, vectors, kernel_type, gamma, coef0, degree, exact)
        weights = coef.reshape(-1, 1)
    else:
        K, weights = X, coef.reshape(-1, 1)
    product = exact_matmul(K, weights) if exact else K @ weights
    scores = (product + _F32(rho[0])).astype(_F32)
    if one_class:
        scores = np.where(scores > 0, _ONE, _F32(-1.0))
    return scores


# --- tree ensembles ------------------------------------------------------------------------------------

# Node modes, as the compiler numbers them (ops/ml.py).
LEQ, LT, GTE, GT, EQ, NEQ, LEAF = range(7)
_COMPARE = {
    LEQ: np.less_equal,
    LT: np.less,
    GTE: np.greater_equal,
    GT: np.greater,
    EQ: np.equal,
    NEQ: np.not_equal,
}


class _Forest:
    """The flat node arrays of a tree ensemble (see tree_ensemble's arguments), as arrays."""

    def __init__(self, nodes, roots, depth, leaf_weights, n_targets, threshold_type):
        features, splits, modes, trues, falses, missing = nodes
        dtype = dtype_from_name(threshold_type)
        self.dtype = dtype
        self.feature = np.asarray(features, dtype=np.intp)
        self.split = np.asarray(splits).astype(dtype)
        self.mode = np.asarray(modes, dtype=np.int8)
        # children[2 i] is node i's true child, children[2 i + 1] its false one
        self.children = np.stack(
            [np.asarray(trues, dtype=np.intp), np.asarray(falses, dtype=np.intp)], axis=1
        ).reshape(-1)
        missing = np.asarray(missing, dtype=bool)
        self.missing = missing if missing.any() else None
        self.roots = np.asarray(roots, dtype=np.intp)
        self.depth = int(depth)
        self.leaf = self.mode == LEAF
        self.modes = sorted(set(np.unique(self.mode).tolist()) - {LEAF})
        leaf_nodes, targets, values = (np.asarray(part) for part in leaf_weights)
        leaf_nodes, targets = leaf_nodes.astype(np.intp), targets.astype(np.intp)
        values = values.astype(dtype)
        count = len(self.mode)
        # weights of one leaf for one target add up in their order (np.add.at is unbuffered)
        self.weights = np.zeros((count, n_targets), dtype=dtype)
        np.add.at(self.weights, (leaf_nodes, targets), values)
        self.has = np.zeros((count, n_targets), dtype=bool)
        self.has[leaf_nodes, targets] = True
        self.first = np.zeros(count, dtype=dtype)  # a leaf's first weight
        firsts, at = np.unique(leaf_nodes, return_index=True)
        self.first[firsts] = values[at]
        self.single_target = len(np.unique(targets)) == 1
        self.all_positive = bool((values >= 0).all())
        interior = ~self.leaf
        self.max_feature = int(self.feature[interior].max()) if interior.any() else -1


def _forest(nodes, roots, depth, leaf_weights, n_targets, threshold_type) -> _Forest:
    """The _Forest of these attributes, built once: keyed by the objects themselves (constant
    tuples and module constants, the same objects on every call), so a call does no per-node
    work."""
    parts = (*nodes, roots, *leaf_weights)
    key = tuple(id(part) for part in parts)
    hit = _FORESTS.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], parts)):
        return hit[1]
    forest = _Forest(nodes, roots, depth, leaf_weights, n_targets, threshold_type)
    if len(_FORESTS) >= _CONSTANTS_KEPT:
        _FORESTS.pop(next(iter(_FORESTS)))
    _FORESTS[key] = (parts, forest)
    return forest


_FORESTS: dict[tuple, tuple] = {}


def _reached_leaves(X, forest: _Forest) -> np.ndarray:
    """[N, T]: the leaf each row reaches in each tree. All pairs go down one level per step,
    `depth` steps: the node's feature is gathered, compared with its split by its mode (a NaN
    follows the true branch where missing-value tracking says so), and the pair moves to that
    child (one gather from the interleaved (true, false) children); a leaf is its own child."""
    rows = _rows(X)
    if rows.shape[1] <= forest.max_feature:
        raise ValueError(
            f"tree ensemble: a node reads feature {forest.max_feature}, the input has "
            f"{rows.shape[1]}"
        )
    values = rows.astype(forest.dtype, copy=False)
    n, width = values.shape
    flat = np.ascontiguousarray(values).reshape(-1)
    offsets = (np.arange(n, dtype=np.intp) * width)[:, None]
    node = np.broadcast_to(forest.roots, (n, len(forest.roots))).copy()
    single = forest.modes[0] if len(forest.modes) == 1 else None
    for _ in range(forest.depth):
        x = flat[offsets + forest.feature[node]]
        split = forest.split[node]
        if single is not None:
            go = _COMPARE[single](x, split)
        else:
            mode = forest.mode[node]
            go = np.zeros(node.shape, dtype=bool)
            for code in forest.modes:
                go |= (mode == code) & _COMPARE[code](x, split)
        if forest.missing is not None:
            go |= forest.missing[node] & np.isnan(x)
        node <<= 1
        node += ~go
        node = forest.children[node]
    return node


def _aggregate(leaves, forest: _Forest, aggregate_function: str, single: bool):
    """(scores [N, C], has [N, C]) over the trees in order: SUM and AVERAGE add the leaves'
    weights tree after tree in the threshold type, starting from 0 (a running sum,
    np.add.accumulate, which is sequential by definition: numpy's sum is pairwise along a
    contiguous axis and so not one fixed order); a one-target ensemble adds each leaf's first
    weight, as onnxruntime. MIN and MAX keep the smallest or largest weight seen."""
    n, trees = leaves.shape
    dtype = forest.dtype
    has = forest.has[leaves].any(axis=1)
    if aggregate_function in ("SUM", "AVERAGE"):
        values = forest.first[leaves][:, :, None] if single else forest.weights[leaves]
        running = np.concatenate([np.zeros((n, 1, values.shape[2]), dtype=dtype), values], axis=1)
        return np.add.accumulate(running, axis=1)[:, -1], has
    if aggregate_function not in ("MIN", "MAX"):
        raise ValueError(f"tree ensemble: unknown aggregate_function {aggregate_function!r}")
    better = np.less if aggregate_function == "MIN" else np.greater
    total = np.zeros(has.shape, dtype=dtype)
    seen = np.zeros(has.shape, dtype=bool)
    for t in range(trees):
        leaf = leaves[:, t]
        value = forest.first[leaf][:, None] if single else forest.weights[leaf]
        present = forest.has[leaf]
        take = present & (~seen | better(value, total))
        total = np.where(take, value, total)
        seen |= present
    return total, has


# Rows are walked and summed in blocks of about this many (row, tree) pairs, which bounds the
# memory of the [rows, trees, targets] arrays.
_PAIRS = 1 << 18


def _scores(X, forest: _Forest, aggregate_function: str, single: bool):
    """_aggregate over _reached_leaves, block of rows after block of rows."""
    rows = _rows(X)
    step = max(1, _PAIRS // max(1, len(forest.roots)))
    if rows.shape[0] <= step:
        return _aggregate(_reached_leaves(rows, forest), forest, aggregate_function, single)
    parts = [
        _aggregate(_reached_leaves(rows[i : i + step], forest), forest, aggregate_function, single)
        for i in range(0, rows.shape[0], step)
    ]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def tree_ensemble(
    X,
    *,
    nodes,
    roots,
    depth,
    leaf_weights,
    n_targets,
    aggregate_function,
    base_values,
    post_transform,
    threshold_type="float32",
    output_type="float32",
    exact=False,
):
    """[N, n_targets] of a regression tree ensemble (TreeEnsembleRegressor, TreeEnsemble).

    nodes: (feature, split, mode, true child, false child, missing-value track) per node, flat
    over all trees, children as node positions, a leaf its own child; roots: each tree's root;
    depth: the deepest tree's; leaf_weights: (node, target, weight) triples. Comparisons and sums
    are in `threshold_type` (float64 for double inputs, as onnxruntime); then base values are
    added (AVERAGE divides by the tree count first) and the post transform applied (one target:
    PROBIT only, as onnxruntime). The result is cast to `output_type`."""
    forest = _forest(nodes, roots, depth, leaf_weights, n_targets, threshold_type)
    single = n_targets == 1
    scores, has = _scores(X, forest, aggregate_function, single)
    dtype = forest.dtype
    base = np.asarray(base_values, dtype=dtype)
    if aggregate_function == "AVERAGE":
        scores = scores / dtype.type(len(forest.roots))
    if single:
        if aggregate_function in ("MIN", "MAX"):
            scores = np.where(has, scores, dtype.type(0))
        if len(base) == 1:
            scores = scores + base[0]
        if post_transform == "PROBIT":
            scores = _probit(scores, exact)
    else:
        if len(base) == n_targets:
            scores = scores + base
        # a target no reached leaf names is written as 0, base value or not (onnxruntime)
        scores = np.where(has, scores, dtype.type(0))
        if post_transform != "NONE":
            scores = _transform(scores, post_transform, exact)
    return scores.astype(dtype_from_name(output_type), copy=False)


def tree_ensemble_classifier(
    X,
    *,
    nodes,
    roots,
    depth,
    leaf_weights,
    labels,
    base_values,
    post_transform,
    threshold_type="float32",
    exact=False,
):
    """(label, scores [N, classes]) of TreeEnsembleClassifier, with onnxruntime's rules.

    Class scores are summed over the trees as tree_ensemble does; a class no reached leaf names
    has no score. More than two classes: base values are added (giving those classes a score),
    the label is the first largest scored class, the scores are post-transformed. Two classes
    (onnxruntime's binary conventions): with two base values, a row whose class 1 has a score
    gets (-(b1 + s0), b1 + s0), else (s0 + b0, s1 + b1); with one, s0 + b0; the positive weight is
    class 1's score if it has one, else class 0's. When every leaf weight names one class (the
    "binary case"), the label is labels[1] where that weight exceeds 0.5 (all weights
    non-negative) or 0, and a single score s is written as [1 - s, s] or, under LOGISTIC,
    [logistic(-s), logistic(s)] (else [-s, s]); otherwise the label is 1 or 0 (index 1 or 0 for
    string labels) by the weight's sign."""
    label_array = _labels(labels)
    classes = len(label_array)
    forest = _forest(nodes, roots, depth, leaf_weights, classes, threshold_type)
    scores, has = _scores(X, forest, "SUM", classes == 1)
    dtype = forest.dtype
    base = np.asarray(base_values, dtype=dtype)
    n = scores.shape[0]
    if classes > 2:
        if len(base):
            scores[:, : len(base)] += base
            has[:, : len(base)] = True
        ranked = np.where(has, scores, -np.inf)
        label = label_array[np.argmax(ranked, axis=1)]
        scores = np.where(has, scores, dtype.type(0))
        return label, _transform(scores, post_transform, exact)
    if classes == 1:
        raise ValueError("TreeEnsembleClassifier with one class is not supported")
    binary_case, all_positive = forest.single_target, forest.all_positive
    s0, s1 = scores[:, 0].copy(), scores[:, 1].copy()
    h0, h1 = has[:, 0], has[:, 1].copy()
    two = np.ones(n, dtype=bool)  # rows that keep two scores
    second = None
    if len(base) == 2:
        one = base[1] + s0
        s1 = np.where(h1, one, s1 + base[1])
        s0 = np.where(h1, -one, s0 + base[0])
        h1 = h1.copy()
    elif len(base) == 1:
        s0 = s0 + base[0]
        two = h1.copy()
    elif len(base) == 0:
        second = 3
        two = h1.copy()
    positive_weight = np.where(two & h1, s1, np.where(h0, s0, dtype.type(0)))
    strings = label_array.dtype == _OBJECT
    if binary_case:
        threshold = 0.5 if all_positive else 0.0
        is_positive = positive_weight > threshold
        label = np.where(is_positive, label_array[1], label_array[0])
        second_class = np.where(is_positive, 0, 1) if all_positive else np.where(is_positive, 2, 3)
    else:
        is_positive = positive_weight > 0
        if strings:
            label = np.where(is_positive, label_array[1], label_array[0])
        else:
            label = np.where(is_positive, 1, 0).astype(np.int64)
        second_class = np.full(n, -1 if second is None else second)
    label = label.astype(label_array.dtype)
    # a class without a score is written (and transformed) as 0 (onnxruntime)
    zero = dtype.type(0)
    pair = np.stack([np.where(h0, s0, zero), np.where(h1, s1, zero)], axis=1)
    out = _transform(pair, post_transform, exact) if two.any() else np.zeros((n, 2), _F32)
    if not two.all():
        single = np.where(h0, s0, zero)[:, None].astype(_F32)
        if post_transform == "PROBIT":
            expanded = np.concatenate([_probit(single, exact), np.zeros_like(single)], axis=1)
        else:
            opposite = _ONE - single
            if post_transform == "LOGISTIC":
                mixed = np.concatenate(
                    [_logistic(-single, exact), _logistic(single, exact)], axis=1
                )
            else:
                mixed = np.concatenate([-single, single], axis=1)
            plain = np.concatenate([single, np.zeros_like(single)], axis=1)
            kind = second_class[:, None]
            expanded = np.where(
                kind <= 1,
                np.where(kind >= 0, np.concatenate([opposite, single], axis=1), plain),
                mixed,
            )
        out = np.where(two[:, None], out, expanded)
    return label, out.astype(_F32, copy=False)
