"""The ai.onnx.ml domain (domain opsets 1 to 5): the operators scikit-learn pipelines converted by
skl2onnx, and LightGBM and XGBoost models converted by onnxmltools, are made of.

Each emitter is one call of one kernel of runtime_support/ml.py, its attributes passed as keyword
literals (pyir.Lit: numbers, escaped strings, tuples), numeric arrays of more than 16 elements as
module constants (the weights file), so no model string reaches the code but as an escaped
literal. Tree ensembles are flattened here, at compile time, into node arrays the kernel
walks level by level (`_flat_trees`): every tree's nodes in one list, children as positions, a
leaf its own child, the leaves' weights as (node, target, weight) triples in onnxruntime's order,
TreeEnsemble's set-membership nodes as chains of equality nodes.

Every operator is exact: comparisons, data movement, float32 elementwise arithmetic and sums in a
fixed order (trees add their leaves tree after tree; the Normalizer and softmax add column after
column); in the exact variant the kernels take `exact=True`, which makes their products
exact_matmul's and their exp, log, tanh and pow the library's own. No node is folded at compile
time (`foldable=False`): string tensors and maps have no place in the weights file.

Semantics not in the specification follow onnxruntime 1.31.1 (docs/ml-domain.md): scores are
float32 whatever the input type; inputs of the linear and SVM operators are converted to float32;
trees compare and add in float64 for double inputs; the binary classifiers' label and score
conventions; ties go to the first class.
"""

from __future__ import annotations

import numpy as np

from onemodel_compile.errors import CompileError, UnsupportedError
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import Const, call
from onemodel_compile.ops.registry import emitter

ML = "ai.onnx.ml"
# Node modes, numbered as runtime_support.ml numbers them (and as TreeEnsemble-5 numbers them).
MODES = {"BRANCH_LEQ": 0, "BRANCH_LT": 1, "BRANCH_GTE": 2, "BRANCH_GT": 3, "BRANCH_EQ": 4}
MODES.update({"BRANCH_NEQ": 5, "LEAF": 6})
LEAF, EQ, MEMBER = 6, 4, 6  # TreeEnsemble-5 uses 6 for BRANCH_MEMBER (no leaf nodes there)
AGGREGATES_V5 = {0: "AVERAGE", 1: "SUM", 2: "MIN", 3: "MAX"}
TRANSFORMS_V5 = {0: "NONE", 1: "SOFTMAX", 2: "LOGISTIC", 3: "SOFTMAX_ZERO", 4: "PROBIT"}


# A numeric attribute of more than this many elements (a tree's nodes, support vectors,
# coefficients) becomes a module constant, in the weights file like a large initializer; smaller
# ones, and every string, are literals. As tuples, a forest of 100 trees (~10**5 nodes) was a
# module of ~10**6 lines that took minutes to format.
INLINE_LIMIT = 16


def _argument(view: NodeView, name: str, value):
    """An attribute for the kernel call: a large numeric array as a module constant (pyir.Const,
    named after the node and attribute), a tuple of them as a tuple, anything else a literal."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biuf" and value.size > INLINE_LIMIT:
            return Const(np.ascontiguousarray(value), f"{view.node.name or view.op_type}_{name}")
        return value.tolist()
    if isinstance(value, tuple):
        parts = _PARTS.get(name) or [str(i) for i in range(len(value))]
        return tuple(_argument(view, f"{name}_{part}", v) for part, v in zip(parts, value))
    return value


# The names of the module constants a tree's arrays become (`<node>_nodes_split`, ...).
_PARTS = {
    "nodes": ("feature", "split", "mode", "true", "false", "missing"),
    "leaf_weights": ("node", "target", "weight"),
}


def _kernel(view: NodeView, name: str, *arguments, **attributes):
    """`rt.<name>(arguments..., key=value, ...)`, the attributes as _argument makes them. Kernels
    key what they build from their attributes on these objects (module constants and constant
    tuples are the same objects on every call)."""
    keywords = {
        key: _argument(view, key, value)
        for key, value in attributes.items()
        if not (key == "exact" and value is False)  # exact=True only in the exact variant
    }
    return call(f"rt.{name}", *arguments, **keywords)


def _array(values, dtype) -> np.ndarray:
    return np.asarray(values, dtype=dtype)


def _exact(view: NodeView) -> bool:
    """Whether the kernels run exact (the exact variant): `exact=True` in the call."""
    return bool(getattr(view.variant, "exact", view.variant == "exact"))


def _list(view: NodeView, name: str) -> list:
    value = view.attr(name)
    if value is None:
        return []
    if isinstance(value, np.ndarray):
        return value.reshape(-1).tolist()
    return list(value)


def _numbers(view: NodeView, name: str) -> np.ndarray:
    """A float list attribute as float32, or its `<name>_as_tensor` form (ml opset 3: double
    values) in the tensor's type."""
    tensor = view.attr(f"{name}_as_tensor")
    if tensor is not None:
        return np.asarray(tensor).reshape(-1)
    return np.asarray(_list(view, name), dtype=np.float32)


def _floats(view: NodeView, name: str) -> np.ndarray:
    return np.asarray(_list(view, name), dtype=np.float32)


def _type_name(dtype) -> str:
    """The name runtime_support.ml's kernels take for an output type."""
    return "string" if np.dtype(dtype) == np.dtype(object) else np.dtype(dtype).name


def _labels(view: NodeView, ints: str = "classlabels_int64s", strings: str = "classlabels_strings"):
    found = _list(view, strings)
    return found if found else [int(v) for v in _list(view, ints)]


def _threshold_type(view: NodeView) -> str:
    """Trees compare and add in float64 for double inputs, float32 otherwise (onnxruntime)."""
    return "float64" if view.inputs[0].dtype == np.float64 else "float32"


# --- simple transformers -----------------------------------------------------------------------------


@emitter("ArrayFeatureExtractor", domain=ML, since=1, exact=True, foldable=False)
def array_feature_extractor(view: NodeView):
    return _kernel(view, "array_feature_extractor", view.inputs[0], view.inputs[1])


@emitter("Binarizer", domain=ML, since=1, exact=True, foldable=False)
def binarizer(view: NodeView):
    return _kernel(view, "binarizer", view.inputs[0], threshold=float(view.attr("threshold")))


@emitter("Scaler", domain=ML, since=1, exact=True, foldable=False)
def scaler(view: NodeView):
    return _kernel(
        view,
        "scaler",
        view.inputs[0],
        offset=[float(v) for v in _list(view, "offset")] or [0.0],
        scale=[float(v) for v in _list(view, "scale")] or [1.0],
    )


@emitter("Imputer", domain=ML, since=1, exact=True, foldable=False)
def imputer(view: NodeView):
    X = view.inputs[0]
    imputed: list[int] | list[float]
    replaced: int | float
    if X.dtype is not None and X.dtype.kind in "iu":
        imputed = [int(v) for v in _list(view, "imputed_value_int64s")]
        replaced = int(view.attr("replaced_value_int64", 0))
    else:
        imputed = [float(v) for v in _list(view, "imputed_value_floats")]
        replaced = float(view.attr("replaced_value_float", 0.0))
    if not imputed:
        raise CompileError(f"{view.node.label}: Imputer has no imputed values")
    return _kernel(view, "imputer", X, imputed=imputed, replaced=replaced)


@emitter("Normalizer", domain=ML, since=1, exact=True, foldable=False)
def normalizer(view: NodeView):
    return _kernel(view, "normalizer", view.inputs[0], norm=view.attr("norm", "MAX"))


@emitter("FeatureVectorizer", domain=ML, since=1, exact=True, foldable=False)
def feature_vectorizer(view: NodeView):
    inputs = [operand for operand in view.inputs if operand is not None]
    dimensions = [int(v) for v in _list(view, "inputdimensions")]
    if len(dimensions) != len(inputs):
        raise CompileError(
            f"{view.node.label}: {len(inputs)} inputs but {len(dimensions)} inputdimensions"
        )
    return _kernel(view, "feature_vectorizer", *inputs, inputdimensions=dimensions)


# --- encoders ------------------------------------------------------------------------------------------


def _label_encoder_tables(view: NodeView):
    """(keys, values, default, output type) of a LabelEncoder at any domain opset: opset 1's
    classes_strings (strings <-> their positions), opset 2's keys_*/values_*, opset 4's tensors."""
    X = view.inputs[0]
    if view.opset < 2:
        classes = _list(view, "classes_strings")
        positions = list(range(len(classes)))
        if X.dtype == np.dtype(object):
            return classes, positions, int(view.attr("default_int64", -1)), "int64"
        return positions, classes, view.attr("default_string", "_Unused"), "string"
    keys = next(
        (
            _list(view, name)
            for name in ("keys_strings", "keys_int64s", "keys_floats", "keys_tensor")
            if view.attr(name) is not None
        ),
        None,
    )
    for name, default_name, kind in (
        ("values_strings", "default_string", "string"),
        ("values_int64s", "default_int64", "int64"),
        ("values_floats", "default_float", "float32"),
    ):
        if view.attr(name) is not None:
            default = view.attr(default_name)
            if view.attr("default_tensor") is not None:
                default = np.asarray(view.attr("default_tensor")).reshape(-1)[0].item()
            return keys, _list(view, name), default, kind
    values = view.attr("values_tensor")
    if keys is None or values is None:
        raise CompileError(f"{view.node.label}: LabelEncoder needs keys_* and values_* attributes")
    kind = _type_name(np.asarray(values).dtype)
    default = view.attr("default_tensor")
    if default is not None:
        default = np.asarray(default).reshape(-1)[0].item()
    else:  # the specification's defaults per value type
        default = {"string": "_Unused"}.get(kind, -1 if kind[0] in "iu" else -0.0)
    return keys, _list(view, "values_tensor"), default, kind


@emitter("LabelEncoder", domain=ML, since=1, exact=True, foldable=False)
def label_encoder(view: NodeView):
    keys, values, default, kind = _label_encoder_tables(view)
    if keys is None or len(keys) != len(values):
        raise CompileError(f"{view.node.label}: LabelEncoder keys and values differ in length")
    if kind.startswith("float") and isinstance(default, (int, float)):
        default = float(default)
    return _kernel(
        view, "label_encoder", view.inputs[0], keys=keys, values=values, default=default, dtype=kind
    )


@emitter("CategoryMapper", domain=ML, since=1, exact=True, foldable=False)
def category_mapper(view: NodeView):
    return _kernel(
        view,
        "category_mapper",
        view.inputs[0],
        cats_strings=_list(view, "cats_strings"),
        cats_int64s=[int(v) for v in _list(view, "cats_int64s")],
        default_string=view.attr("default_string", "_Unused"),
        default_int64=int(view.attr("default_int64", -1)),
    )


@emitter("OneHotEncoder", domain=ML, since=1, exact=True, foldable=False)
def one_hot_encoder(view: NodeView):
    X = view.inputs[0]
    if X.dtype == np.dtype(object):
        categories = _list(view, "cats_strings")
    else:
        categories = [int(v) for v in _list(view, "cats_int64s")]
    return _kernel(
        view, "one_hot_encoder", X, categories=categories, zeros=int(view.attr("zeros", 1))
    )


@emitter("CastMap", domain=ML, since=1, exact=True, foldable=False)
def cast_map(view: NodeView):
    return _kernel(
        view,
        "cast_map",
        view.inputs[0],
        cast_to=view.attr("cast_to", "TO_FLOAT"),
        map_form=view.attr("map_form", "DENSE"),
        max_map=int(view.attr("max_map", 1)),
    )


@emitter("DictVectorizer", domain=ML, since=1, exact=True, foldable=False)
def dict_vectorizer(view: NodeView):
    vocabulary = _list(view, "string_vocabulary") or [
        int(v) for v in _list(view, "int64_vocabulary")
    ]
    out = view.outputs[0]
    dtype = out.dtype if out is not None and out.dtype is not None else None
    if dtype is None:
        value_type = getattr(view.inputs[0].type, "value", None)
        dtype = getattr(value_type, "dtype", None)
    if dtype is None:
        raise CompileError(f"{view.node.label}: the type of the map's values is unknown")
    return _kernel(
        view, "dict_vectorizer", view.inputs[0], vocabulary=vocabulary, dtype=_type_name(dtype)
    )


@emitter("ZipMap", domain=ML, since=1, exact=True, foldable=False)
def zip_map(view: NodeView):
    return _kernel(view, "zip_map", view.inputs[0], labels=_labels(view))


# --- linear models and SVMs ------------------------------------------------------------------------


@emitter("LinearClassifier", domain=ML, since=1, exact=True, foldable=False)
def linear_classifier(view: NodeView):
    return _kernel(
        view,
        "linear_classifier",
        view.inputs[0],
        coefficients=_floats(view, "coefficients"),
        intercepts=[float(v) for v in _list(view, "intercepts")],
        labels=_labels(view, ints="classlabels_ints"),
        post_transform=view.attr("post_transform", "NONE"),
        exact=_exact(view),
    )


@emitter("LinearRegressor", domain=ML, since=1, exact=True, foldable=False)
def linear_regressor(view: NodeView):
    return _kernel(
        view,
        "linear_regressor",
        view.inputs[0],
        coefficients=_floats(view, "coefficients"),
        intercepts=[float(v) for v in _list(view, "intercepts")],
        targets=int(view.attr("targets", 1)),
        post_transform=view.attr("post_transform", "NONE"),
        exact=_exact(view),
    )


def _svm_common(view: NodeView) -> dict:
    return dict(
        support_vectors=_floats(view, "support_vectors"),
        coefficients=_floats(view, "coefficients"),
        rho=[float(v) for v in _list(view, "rho")] or [0.0],
        kernel_type=view.attr("kernel_type", "LINEAR"),
        kernel_params=[float(v) for v in _list(view, "kernel_params")],
    )


@emitter("SVMClassifier", domain=ML, since=1, exact=True, foldable=False)
def svm_classifier(view: NodeView):
    return _kernel(
        view,
        "svm_classifier",
        view.inputs[0],
        labels=_labels(view, ints="classlabels_ints"),
        vectors_per_class=[int(v) for v in _list(view, "vectors_per_class")],
        prob_a=[float(v) for v in _list(view, "prob_a")],
        prob_b=[float(v) for v in _list(view, "prob_b")],
        post_transform=view.attr("post_transform", "NONE"),
        **_svm_common(view),
        exact=_exact(view),
    )


@emitter("SVMRegressor", domain=ML, since=1, exact=True, foldable=False)
def svm_regressor(view: NodeView):
    return _kernel(
        view,
        "svm_regressor",
        view.inputs[0],
        n_supports=int(view.attr("n_supports", 0)),
        one_class=int(view.attr("one_class", 0)),
        **_svm_common(view),
        exact=_exact(view),
    )


# --- tree ensembles ---------------------------------------------------------------------------------


def _depth(roots, trues: list[int], falses: list[int], label: str) -> int:
    """The number of branchings on the longest root-to-leaf path (nodes may share children; a
    cycle is an error)."""
    frontier = {int(r) for r in roots}
    depth = 0
    while True:
        below = {c for n in frontier for c in (trues[n], falses[n]) if c != n}
        if not below:
            return depth
        depth += 1
        if depth > len(trues):
            raise CompileError(f"{label}: a tree's branches form a cycle")
        frontier = below


def _flat_trees(view: NodeView, prefix: str):
    """(nodes, roots, depth, leaf_weights) of a TreeEnsembleRegressor ("target") or
    TreeEnsembleClassifier ("class") for runtime_support.ml, resolved at compile time.

    Roots are the first node of each run of equal tree ids, in node order, and leaf weights are
    taken in (tree id, node id, position) order, as onnxruntime builds its trees; weights of
    interior nodes are ignored (onnxruntime: old onnxmltools versions wrote some)."""
    label = view.node.label
    tree_ids = [int(v) for v in _list(view, "nodes_treeids")]
    node_ids = [int(v) for v in _list(view, "nodes_nodeids")]
    features = [int(v) for v in _list(view, "nodes_featureids")]
    modes_text = _list(view, "nodes_modes")
    splits = _numbers(view, "nodes_values")
    true_ids = [int(v) for v in _list(view, "nodes_truenodeids")]
    false_ids = [int(v) for v in _list(view, "nodes_falsenodeids")]
    missing = [int(v) for v in _list(view, "nodes_missing_value_tracks_true")]
    count = len(tree_ids)
    lengths = {len(x) for x in (node_ids, features, modes_text, true_ids, false_ids)}
    if lengths != {count} or len(splits) not in (count,):
        raise CompileError(f"{label}: the nodes_* attributes differ in length")
    unknown = sorted(set(modes_text) - set(MODES))
    if unknown:
        raise UnsupportedError(f"{label}: node mode {unknown[0]!r} is not supported")
    modes = [MODES[m] for m in modes_text]
    position = {}
    for i, key in enumerate(zip(tree_ids, node_ids)):
        if key in position:
            raise CompileError(f"{label}: node {key[1]} of tree {key[0]} appears twice")
        position[key] = i

    def child(i: int, ids: list[int]) -> int:
        if modes[i] == LEAF:
            return i
        key = (tree_ids[i], ids[i])
        if key not in position:
            raise CompileError(f"{label}: node {ids[i]} of tree {tree_ids[i]} does not exist")
        return position[key]

    trues = [child(i, true_ids) for i in range(count)]
    falses = [child(i, false_ids) for i in range(count)]
    roots = [i for i in range(count) if i == 0 or tree_ids[i] != tree_ids[i - 1]]
    missing = (missing + [0] * count)[:count]
    w_trees = [int(v) for v in _list(view, f"{prefix}_treeids")]
    w_nodes = [int(v) for v in _list(view, f"{prefix}_nodeids")]
    w_ids = [int(v) for v in _list(view, f"{prefix}_ids")]
    w_values = _numbers(view, f"{prefix}_weights")
    if not len(w_trees) == len(w_nodes) == len(w_ids) == len(w_values):
        raise CompileError(f"{label}: the {prefix}_* attributes differ in length")
    order = sorted(range(len(w_trees)), key=lambda k: (w_trees[k], w_nodes[k], k))
    leaf_nodes, targets, leaf_weights = [], [], []
    for k in order:
        key = (w_trees[k], w_nodes[k])
        if key not in position:
            raise CompileError(f"{label}: weight for node {key[1]} of tree {key[0]}, no such node")
        if modes[position[key]] != LEAF:
            continue
        leaf_nodes.append(position[key])
        targets.append(w_ids[k])
        leaf_weights.append(w_values[k])
    depth = _depth(roots, trues, falses, label)
    nodes = (
        _array(features, np.int32),
        splits,
        _array(modes, np.uint8),
        _array(trues, np.int32),
        _array(falses, np.int32),
        _array(missing, np.uint8),
    )
    weights = np.asarray(leaf_weights, dtype=w_values.dtype)
    leaves = (_array(leaf_nodes, np.int32), _array(targets, np.int32), weights)
    return nodes, _array(roots, np.int32), depth, leaves


@emitter("TreeEnsembleRegressor", domain=ML, since=1, exact=True, foldable=False)
def tree_ensemble_regressor(view: NodeView):
    nodes, roots, depth, leaves = _flat_trees(view, "target")
    n_targets = int(view.attr("n_targets", 1))
    if len(leaves[1]) and leaves[1].max() >= n_targets:
        raise CompileError(f"{view.node.label}: a target id is not below n_targets={n_targets}")
    return _kernel(
        view,
        "tree_ensemble",
        view.inputs[0],
        nodes=nodes,
        roots=roots,
        depth=depth,
        leaf_weights=leaves,
        n_targets=n_targets,
        aggregate_function=view.attr("aggregate_function", "SUM"),
        base_values=_numbers(view, "base_values"),
        post_transform=view.attr("post_transform", "NONE"),
        threshold_type=_threshold_type(view),
        output_type="float32",
        exact=_exact(view),
    )


@emitter("TreeEnsembleClassifier", domain=ML, since=1, exact=True, foldable=False)
def tree_ensemble_classifier(view: NodeView):
    nodes, roots, depth, leaves = _flat_trees(view, "class")
    labels = _labels(view)
    if len(leaves[1]) and leaves[1].max() >= len(labels):
        raise CompileError(f"{view.node.label}: a class id is not below the number of labels")
    return _kernel(
        view,
        "tree_ensemble_classifier",
        view.inputs[0],
        nodes=nodes,
        roots=roots,
        depth=depth,
        leaf_weights=leaves,
        labels=labels,
        base_values=_numbers(view, "base_values"),
        post_transform=view.attr("post_transform", "NONE"),
        threshold_type=_threshold_type(view),
        exact=_exact(view),
    )


def _flat_trees_v5(view: NodeView):
    """TreeEnsemble (ml opset 5) in the same flat form: interior nodes first, then the leaves;
    a BRANCH_MEMBER node becomes a chain of BRANCH_EQ nodes, one per member (the set's values
    in `membership_values`, sets separated by NaN), the missing-value track on the first."""
    label = view.node.label
    features = [int(v) for v in _list(view, "nodes_featureids")]
    modes = [int(v) for v in _list(view, "nodes_modes")]
    split_type = np.asarray(view.attr("nodes_splits")).dtype
    splits = [float(v) for v in _list(view, "nodes_splits")]
    true_ids = [int(v) for v in _list(view, "nodes_truenodeids")]
    false_ids = [int(v) for v in _list(view, "nodes_falsenodeids")]
    true_leafs = [int(v) for v in _list(view, "nodes_trueleafs")]
    false_leafs = [int(v) for v in _list(view, "nodes_falseleafs")]
    count = len(features)
    missing = [int(v) for v in _list(view, "nodes_missing_value_tracks_true")] + [0] * count
    missing = missing[:count]
    targets = [int(v) for v in _list(view, "leaf_targetids")]
    weight_type = np.asarray(view.attr("leaf_weights")).dtype
    weights = [float(v) for v in _list(view, "leaf_weights")]
    lengths = {len(x) for x in (modes, splits, true_ids, false_ids, true_leafs, false_leafs)}
    if lengths != {count} or len(targets) != len(weights):
        raise CompileError(f"{label}: the nodes_* or leaf_* attributes differ in length")
    sets: list[list[float]] = []
    members = _list(view, "membership_values")
    current: list[float] = []
    for value in members:
        if np.isnan(value):
            sets.append(current)
            current = []
        else:
            current.append(float(value))
    if current:
        sets.append(current)
    leaves = len(targets)
    # positions: interior node i at i, leaf k at count + k, chain nodes after them
    out_features, out_splits, out_modes = list(features), list(splits), list(modes)
    out_true, out_false, out_missing = [0] * count, [0] * count, list(missing)

    def target(i: int, ids: list[int], is_leaf: list[int]) -> int:
        index = ids[i]
        limit = leaves if is_leaf[i] else count
        if not 0 <= index < limit:
            raise CompileError(
                f"{label}: node {i} points at a missing {'leaf' if is_leaf[i] else 'node'}"
            )
        return count + index if is_leaf[i] else index

    for i in range(count):
        out_true[i] = target(i, true_ids, true_leafs)
        out_false[i] = target(i, false_ids, false_leafs)
    out_features += [0] * leaves
    out_splits += [0.0] * leaves
    out_modes += [LEAF] * leaves
    out_true += [count + k for k in range(leaves)]
    out_false += [count + k for k in range(leaves)]
    out_missing += [0] * leaves
    member_index = 0
    for i in range(count):
        if modes[i] == MEMBER:
            if member_index >= len(sets):
                raise CompileError(f"{label}: a BRANCH_MEMBER node has no membership set")
            values = sets[member_index] or [float("nan")]  # an empty set matches nothing
            member_index += 1
            yes, no = out_true[i], out_false[i]
            chain = [i] + [len(out_modes) + k for k in range(len(values) - 1)]
            for k, value in enumerate(values):
                node = chain[k]
                next_node = chain[k + 1] if k + 1 < len(chain) else no
                if node == i:
                    out_modes[i], out_splits[i], out_true[i], out_false[i] = (
                        EQ,
                        value,
                        yes,
                        next_node,
                    )
                else:
                    out_features.append(features[i])
                    out_splits.append(value)
                    out_modes.append(EQ)
                    out_true.append(yes)
                    out_false.append(next_node)
                    out_missing.append(0)
        elif modes[i] not in range(6):
            raise UnsupportedError(f"{label}: node mode {modes[i]} is not supported")
    roots = [int(v) for v in _list(view, "tree_roots")]
    if any(not 0 <= r < count for r in roots):
        raise CompileError(f"{label}: a tree root is not a node")
    depth = _depth(roots, out_true, out_false, label)
    nodes = (
        _array(out_features, np.int32),
        _array(out_splits, split_type),
        _array(out_modes, np.uint8),
        _array(out_true, np.int32),
        _array(out_false, np.int32),
        _array(out_missing, np.uint8),
    )
    leaf_weights = (
        _array([count + k for k in range(leaves)], np.int32),
        _array(targets, np.int32),
        _array(weights, weight_type),
    )
    return nodes, _array(roots, np.int32), depth, leaf_weights


@emitter("TreeEnsemble", domain=ML, since=5, exact=True, foldable=False)
def tree_ensemble(view: NodeView):
    nodes, roots, depth, leaves = _flat_trees_v5(view)
    X = view.inputs[0]
    if X.dtype is not None and X.dtype not in (np.float32, np.float64):
        raise UnsupportedError(f"{view.node.label}: TreeEnsemble on {X.dtype.name} input")
    n_targets = int(view.attr("n_targets", 1))
    if len(leaves[1]) and leaves[1].max() >= n_targets:
        raise CompileError(f"{view.node.label}: a leaf target id is not below n_targets")
    dtype = _threshold_type(view)
    return _kernel(
        view,
        "tree_ensemble",
        X,
        nodes=nodes,
        roots=roots,
        depth=depth,
        leaf_weights=leaves,
        n_targets=n_targets,
        aggregate_function=AGGREGATES_V5.get(int(view.attr("aggregate_function")), "SUM"),
        base_values=[],
        post_transform=TRANSFORMS_V5.get(int(view.attr("post_transform")), "NONE"),
        threshold_type=dtype,
        output_type=dtype,
        exact=_exact(view),
    )
