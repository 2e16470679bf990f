"""(Re)builds tests/ml_models/: scikit-learn, LightGBM and XGBoost models converted to ONNX the way
users convert them (skl2onnx, onnxmltools), plus a few small graphs written with onnx.helper for the
ai.onnx.ml operators no converter emits (CastMap, CategoryMapper, TreeEnsemble of ml opset 5).

NEEDS the `ml-models` extra (scikit-learn, skl2onnx, lightgbm, xgboost-cpu, onnxmltools), which the
tests do not: they read the committed files and run onnxruntime (a test dependency) on them.

    .venv/bin/pip install -e ".[ml-models]"
    .venv/bin/python -m tools.make_ml_models [--out tests/ml_models] [--only NAME ...]

Per model NAME it writes:

- `NAME.onnx`: the converted model. Training data are scikit-learn's bundled data sets (iris, wine,
  breast_cancer, diabetes; no download) or synthetic data, every random state fixed, models kept
  small (a few trees, a few estimators), so every file is a few kB to a few hundred kB.
- `NAME.npz`: the feed sets the test runs, `<k>:input:<name>` (k = 0: held-out rows, some with NaN
  where the model accepts missing values, and rows whose features sit exactly on split thresholds;
  k = 1: one row). String inputs are stored as numpy unicode arrays (no pickle), a map input
  (DictVectorizer) as `<k>:mapkeys:<name>` and `<k>:mapvalues:<name>` holding one dict. No expected
  outputs are stored: the test compares with onnxruntime 1.31.1 when it runs.
- `README.md`: the table of the models (converter, opsets, operators, size), written from the
  builders below.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tools.real_models_common import write_npz

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "ml_models"
OPSET = 17  # default-domain opset of the converted models unless a builder says otherwise
SEED = 0
ONNXMLTOOLS_OPSET = 15  # the highest onnxmltools 1.16 converts to


@dataclass
class Built:
    model: onnx.ModelProto
    feeds: list[dict]  # per feed set: input name -> array (or dict for a map input)
    made_by: str


@dataclass
class Data:
    X: np.ndarray
    y: np.ndarray
    test: np.ndarray  # held-out rows
    extra: dict = field(default_factory=dict)


def _split(X, y, n_test=24) -> Data:
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(X))
    test, train = order[:n_test], order[n_test:]
    return Data(X[train], y[train], X[test])


def bundled(name: str) -> Data:
    from sklearn import datasets

    loader = getattr(datasets, f"load_{name}")
    X, y = loader(return_X_y=True)
    return _split(X.astype(np.float32), y)


def synthetic_classes(n_classes=3, n_features=6, n=300) -> Data:
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=n,
        n_features=n_features,
        n_informative=4,
        n_redundant=1,
        n_classes=n_classes,
        random_state=SEED,
    )
    return _split(X.astype(np.float32), y)


def synthetic_regression(n_features=5, n_targets=1, n=300) -> Data:
    from sklearn.datasets import make_regression

    X, y = make_regression(
        n_samples=n, n_features=n_features, n_targets=n_targets, noise=5.0, random_state=SEED
    )
    return _split(X.astype(np.float32), y)


def with_nans(X: np.ndarray, fraction=0.15, seed=1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = X.copy()
    X[rng.random(X.shape) < fraction] = np.nan
    return X


def threshold_rows(model: onnx.ModelProto, rows: np.ndarray, count=12) -> np.ndarray:
    """Copies of `rows` whose split feature is set exactly to a node's threshold (a tree's
    comparison is decided by `<=` against `<` there)."""
    found = []
    for node in model.graph.node:
        if not node.op_type.startswith("TreeEnsemble"):
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        values = attrs.get("nodes_values")
        if values is None and "nodes_values_as_tensor" in attrs:
            values = numpy_helper.to_array(attrs["nodes_values_as_tensor"])
        if values is None:
            continue
        modes = attrs["nodes_modes"]
        features = attrs["nodes_featureids"]
        for mode, feature, value in zip(modes, features, values):
            if mode != b"LEAF" and len(found) < count:
                row = rows[len(found) % len(rows)].copy()
                row[feature] = value
                found.append(row)
    return np.array(found, dtype=rows.dtype).reshape(-1, rows.shape[1])


def skl(model, X: np.ndarray, options=None, ml_opset=3, opset=OPSET, initial_types=None):
    from skl2onnx import to_onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return to_onnx(
            model,
            X[:1] if initial_types is None else None,
            initial_types=initial_types,
            options=options,
            target_opset={"": opset, "ai.onnx.ml": ml_opset},
        )


@contextlib.contextmanager
def bools_as_ints():
    """skl2onnx 1.20 writes HistGradientBoosting's missing-value flags as Python bools, which
    onnx.helper refuses in an ints attribute: they are made ints while it converts."""
    original = helper.make_attribute

    def make_attribute(key, value, *args, **kwargs):
        if isinstance(value, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in value):
            value = [int(v) for v in value]
        return original(key, value, *args, **kwargs)

    helper.make_attribute = make_attribute
    try:
        yield
    finally:
        helper.make_attribute = original


def fit(model, data: Data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(data.X, data.y)
    return model


def feeds_for(onnx_model, test: np.ndarray, name: str | None = None) -> list[dict]:
    name = name or onnx_model.graph.input[0].name
    return [{name: test}, {name: test[:1]}]


def classifier(estimator, data: Data, zipmap=True, ml_opset=3, nan=False, edges=False, **kw):
    model = fit(estimator, data)
    options = None if zipmap else {id(model): {"zipmap": False}}
    onnx_model = skl(model, data.X, options=options, ml_opset=ml_opset, **kw)
    test = data.test
    if nan:
        test = np.concatenate([test, with_nans(test)])
    if edges:
        test = np.concatenate([test, threshold_rows(onnx_model, data.test)])
    return Built(onnx_model, feeds_for(onnx_model, test), "skl2onnx")


regressor = classifier


# --- the builders -----------------------------------------------------------------------------


def scaler_standard():
    from sklearn.preprocessing import StandardScaler

    data = bundled("wine")
    model = fit(StandardScaler(), data)
    onnx_model = skl(model, data.X)
    return Built(onnx_model, feeds_for(onnx_model, data.test), "skl2onnx")


def pipeline_minmax_logreg():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler

    return classifier(
        make_pipeline(MinMaxScaler(), LogisticRegression(max_iter=500)), bundled("iris")
    )


def logreg_binary():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    return classifier(est, bundled("breast_cancer"))


def logreg_binary_nozipmap():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    return classifier(est, bundled("breast_cancer"), zipmap=False)


def logreg_multi_nozipmap():
    from sklearn.linear_model import LogisticRegression

    return classifier(LogisticRegression(max_iter=1000), bundled("wine"), zipmap=False)


def logreg_string_labels():
    from sklearn.linear_model import LogisticRegression

    data = bundled("iris")
    data.y = np.array(["setosa", "versicolor", "virginica"], dtype=object)[data.y]
    return classifier(LogisticRegression(max_iter=500), data)


def sgd_binary_string_labels():
    from sklearn.linear_model import SGDClassifier

    data = bundled("breast_cancer")
    data.y = np.array(["benign", "malignant"], dtype=object)[data.y]
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    est = make_pipeline(StandardScaler(), SGDClassifier(loss="log_loss", random_state=SEED))
    return classifier(est, data)


def linear_regression():
    from sklearn.linear_model import LinearRegression

    return regressor(LinearRegression(), bundled("diabetes"))


def linear_regression_two_targets():
    from sklearn.linear_model import Ridge

    return regressor(Ridge(alpha=0.5), synthetic_regression(n_targets=2))


def normalizers():
    from sklearn.pipeline import make_union
    from sklearn.preprocessing import Normalizer

    data = bundled("iris")
    est = make_union(Normalizer("l1"), Normalizer("l2"), Normalizer("max"))
    model = fit(est, data)
    onnx_model = skl(model, data.X)
    test = np.concatenate([data.test, np.zeros((1, data.X.shape[1]), np.float32)])
    return Built(onnx_model, feeds_for(onnx_model, test), "skl2onnx (FeatureUnion)")


def binarizer_scaler():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Binarizer, MaxAbsScaler

    data = bundled("wine")
    model = fit(make_pipeline(MaxAbsScaler(), Binarizer(threshold=0.5)), data)
    onnx_model = skl(model, data.X)
    return Built(onnx_model, feeds_for(onnx_model, data.test), "skl2onnx")


def imputer_scaler_logreg():
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    data = bundled("iris")
    data.X = with_nans(data.X, 0.1, seed=2)
    data.test = with_nans(data.test, 0.2, seed=3)
    est = make_pipeline(SimpleImputer(strategy="mean"), StandardScaler(), LogisticRegression())
    return classifier(est, data)


def standardized(data: Data) -> Data:
    """`data` with its features standardized by the training rows' statistics (skl2onnx 1.20
    refuses a LinearSVC inside a Pipeline, so the scaling is done beforehand)."""
    mean, std = data.X.mean(axis=0), data.X.std(axis=0)
    return Data((data.X - mean) / std, data.y, (data.test - mean) / std)


def linear_svc():
    from sklearn.svm import LinearSVC

    return classifier(LinearSVC(random_state=SEED), standardized(bundled("wine")))


def linear_svc_binary():
    from sklearn.svm import LinearSVC

    return classifier(LinearSVC(random_state=SEED), standardized(bundled("breast_cancer")))


def svc_rbf_proba():
    from sklearn.svm import SVC

    return classifier(SVC(probability=True, random_state=SEED), bundled("iris"))


def svc_rbf_binary():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    data = synthetic_classes(n_classes=2, n=160)
    return classifier(make_pipeline(StandardScaler(), SVC()), data, zipmap=False)


def svc_poly_multiclass():
    from sklearn.svm import SVC

    data = synthetic_classes(n_classes=4, n=200)
    return classifier(SVC(kernel="poly", degree=3, gamma=0.1, coef0=1.0), data, zipmap=False)


def svc_sigmoid_proba_strings():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    data = bundled("wine")
    data.y = np.array(["barolo", "grignolino", "barbera"], dtype=object)[data.y]
    est = make_pipeline(
        StandardScaler(), SVC(kernel="sigmoid", probability=True, random_state=SEED)
    )
    return classifier(est, data)


def svr_rbf():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVR

    return regressor(make_pipeline(StandardScaler(), SVR(C=50.0)), bundled("diabetes"))


def linear_svr():
    from sklearn.svm import LinearSVR

    return regressor(LinearSVR(random_state=SEED, max_iter=5000), synthetic_regression())


def one_class_svm():
    from sklearn.svm import OneClassSVM

    data = bundled("iris")
    model = fit(OneClassSVM(gamma=0.2, nu=0.1), data)
    onnx_model = skl(model, data.X)
    test = np.concatenate([data.test, data.test * 3])
    return Built(onnx_model, feeds_for(onnx_model, test), "skl2onnx")


def decision_tree_classifier():
    from sklearn.tree import DecisionTreeClassifier

    est = DecisionTreeClassifier(max_depth=5, random_state=SEED)
    return classifier(est, bundled("iris"), edges=True)


def decision_tree_regressor():
    from sklearn.tree import DecisionTreeRegressor

    est = DecisionTreeRegressor(max_depth=6, random_state=SEED)
    return regressor(est, bundled("diabetes"), edges=True)


def tree_ensemble_v5_double():
    """A decision tree regressor as ml-opset-5 TreeEnsemble in double precision (double splits,
    weights, input and output: onnxruntime refuses skl2onnx's double TreeEnsembleRegressor)."""
    from sklearn.tree import DecisionTreeRegressor

    data = bundled("diabetes")
    data.X, data.test = data.X.astype(np.float64), data.test.astype(np.float64)
    model = fit(DecisionTreeRegressor(max_depth=6, random_state=SEED), data)
    converted = skl(model, data.X.astype(np.float32), ml_opset=3)
    (node,) = [n for n in converted.graph.node if n.op_type == "TreeEnsembleRegressor"]
    v5 = _tree_ensemble_v5(node, np.float64, model.tree_)
    v5.input[:], v5.output[:] = ["X"], ["variable"]
    inputs = [helper.make_tensor_value_info("X", TensorProto.DOUBLE, [None, data.X.shape[1]])]
    outputs = [helper.make_tensor_value_info("variable", TensorProto.DOUBLE, [None, 1])]
    onnx_model = _ml_model([v5], inputs, outputs, ml_opset=5)
    edges = data.test[: len(model.tree_.threshold)].copy()
    for row, (feature, threshold) in enumerate(zip(model.tree_.feature, model.tree_.threshold)):
        if feature >= 0 and row < len(edges):
            edges[row, feature] = threshold  # sklearn's own double threshold
    test = np.concatenate([data.test, edges])
    return Built(
        onnx_model, feeds_for(onnx_model, test), "skl2onnx, rewritten to TreeEnsemble-5 (double)"
    )


def random_forest_classifier():
    from sklearn.ensemble import RandomForestClassifier

    est = RandomForestClassifier(n_estimators=8, max_depth=6, random_state=SEED)
    return classifier(est, bundled("wine"), edges=True)


def random_forest_classifier_strings_nozipmap():
    from sklearn.ensemble import RandomForestClassifier

    data = synthetic_classes(n_classes=3)
    data.y = np.array(["low", "mid", "high"], dtype=object)[data.y]
    est = RandomForestClassifier(n_estimators=6, max_depth=5, random_state=SEED)
    return classifier(est, data, zipmap=False)


def random_forest_regressor():
    from sklearn.ensemble import RandomForestRegressor

    est = RandomForestRegressor(n_estimators=8, max_depth=6, random_state=SEED)
    return regressor(est, bundled("diabetes"), edges=True)


def extra_trees_regressor_two_targets():
    from sklearn.ensemble import ExtraTreesRegressor

    est = ExtraTreesRegressor(n_estimators=5, max_depth=5, random_state=SEED)
    return regressor(est, synthetic_regression(n_targets=2))


def gradient_boosting_binary():
    from sklearn.ensemble import GradientBoostingClassifier

    est = GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=SEED)
    return classifier(est, bundled("breast_cancer"), edges=True)


def gradient_boosting_multiclass():
    from sklearn.ensemble import GradientBoostingClassifier

    est = GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=SEED)
    return classifier(est, bundled("iris"))


def gradient_boosting_regressor():
    from sklearn.ensemble import GradientBoostingRegressor

    est = GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=SEED)
    return regressor(est, bundled("diabetes"), edges=True)


def hist_gradient_boosting_nan_binary():
    from sklearn.ensemble import HistGradientBoostingClassifier

    data = bundled("breast_cancer")
    data.X = with_nans(data.X, 0.1, seed=4)
    est = HistGradientBoostingClassifier(max_iter=15, max_depth=3, random_state=SEED)
    with bools_as_ints():
        return classifier(est, data, nan=True)


def hist_gradient_boosting_nan_multiclass():
    from sklearn.ensemble import HistGradientBoostingClassifier

    data = bundled("wine")
    data.X = with_nans(data.X, 0.1, seed=5)
    est = HistGradientBoostingClassifier(max_iter=8, max_depth=3, random_state=SEED)
    with bools_as_ints():
        return classifier(est, data, nan=True, zipmap=False)


def hist_gradient_boosting_nan_regressor():
    from sklearn.ensemble import HistGradientBoostingRegressor

    data = bundled("diabetes")
    data.X = with_nans(data.X, 0.1, seed=6)
    est = HistGradientBoostingRegressor(max_iter=15, max_depth=3, random_state=SEED)
    with bools_as_ints():
        return regressor(est, data, nan=True)


def _mixed_frame(n=240, seed=SEED):
    """Two numeric columns (one with NaN) and two string columns, as a user's table."""
    rng = np.random.default_rng(seed)
    age = rng.normal(40, 12, n).astype(np.float32)
    income = rng.lognormal(10, 0.5, n).astype(np.float32)
    income[rng.random(n) < 0.1] = np.nan
    city = rng.choice(["paris", "lyon", "nice", "lille"], n)
    plan = rng.choice(["basic", "pro", "team"], n)
    score = (age / 20 + (city == "paris") + (plan == "pro") * 1.5 + rng.normal(0, 0.5, n)) > 2.5
    numeric = np.stack([age, income], axis=1)
    strings = np.stack([city, plan], axis=1).astype(object)
    return numeric, strings, score.astype(np.int64)


def column_transformer_strings():
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    numeric, strings, y = _mixed_frame()
    frame = _frame(numeric, strings)
    pre = ColumnTransformer(
        [
            (
                "num",
                make_pipeline(SimpleImputer(strategy="median"), StandardScaler()),
                ["age", "income"],
            ),
            ("cat", OneHotEncoder(handle_unknown="ignore"), ["city", "plan"]),
        ]
    )
    model = Pipeline([("pre", pre), ("clf", LogisticRegression(max_iter=500))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(frame[:200], y[:200])
    types = [
        ("age", FloatTensorType([None, 1])),
        ("income", FloatTensorType([None, 1])),
        ("city", StringTensorType([None, 1])),
        ("plan", StringTensorType([None, 1])),
    ]
    onnx_model = skl(model, None, initial_types=types)
    test_strings = strings[200:].copy()
    test_strings[0, 0] = "marseille"  # a category the encoder never saw
    feeds = _column_feeds(numeric[200:], test_strings)
    return Built(onnx_model, feeds, "skl2onnx (ColumnTransformer, string columns)")


def _frame(numeric, strings):
    import pandas

    return pandas.DataFrame(
        {
            "age": numeric[:, 0],
            "income": numeric[:, 1],
            "city": strings[:, 0],
            "plan": strings[:, 1],
        }
    )


def _column_feeds(numeric, strings):
    def one(rows):
        return {
            "age": numeric[rows, :1],
            "income": numeric[rows, 1:2],
            "city": strings[rows, :1].astype(str),
            "plan": strings[rows, 1:2].astype(str),
        }

    return [one(slice(None)), one(slice(0, 1))]


def column_transformer_trees():
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OrdinalEncoder

    numeric, strings, y = _mixed_frame(seed=7)
    frame = _frame(numeric, strings)
    pre = ColumnTransformer(
        [
            ("num", SimpleImputer(strategy="constant", fill_value=-1.0), ["age", "income"]),
            ("cat", OrdinalEncoder(), ["city", "plan"]),
        ]
    )
    labels = np.array(["no", "yes"], dtype=object)[y]
    model = Pipeline(
        [
            ("pre", pre),
            ("clf", RandomForestClassifier(n_estimators=5, max_depth=4, random_state=SEED)),
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(frame[:200], labels[:200])
    types = [
        ("age", FloatTensorType([None, 1])),
        ("income", FloatTensorType([None, 1])),
        ("city", StringTensorType([None, 1])),
        ("plan", StringTensorType([None, 1])),
    ]
    onnx_model = skl(model, None, initial_types=types)
    feeds = _column_feeds(numeric[200:], strings[200:])
    return Built(onnx_model, feeds, "skl2onnx (ColumnTransformer, OrdinalEncoder, string labels)")


def onehot_int_categories():
    from skl2onnx.common.data_types import Int64TensorType
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(SEED)
    X = rng.integers(0, 5, size=(200, 3)).astype(np.int64)
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(0, 0.1, 200)
    model = make_pipeline(OneHotEncoder(handle_unknown="ignore"), LinearRegression())
    model.fit(X[:180], y[:180])
    types = [("X", Int64TensorType([None, 3]))]
    onnx_model = skl(model, None, initial_types=types)
    test = X[180:].copy()
    test[0, 1] = 9  # unseen
    return Built(onnx_model, feeds_for(onnx_model, test), "skl2onnx (OneHotEncoder on int64)")


def label_encoder_strings():
    from skl2onnx.common.data_types import StringTensorType
    from sklearn.preprocessing import LabelEncoder

    words = np.array(["cat", "dog", "emu", "yak", "ant"])
    model = LabelEncoder().fit(words)
    types = [("X", StringTensorType([None]))]
    onnx_model = skl(model, None, initial_types=types, ml_opset=2)
    test = np.array(["dog", "ant", "yak", "yak", "cat", "emu"])
    return Built(onnx_model, feeds_for(onnx_model, test), "skl2onnx (LabelEncoder, ml opset 2)")


def label_encoder_ints_opset4():
    from skl2onnx.common.data_types import Int64TensorType
    from sklearn.preprocessing import LabelEncoder

    model = LabelEncoder().fit(np.array([30, 10, 20, 40, 10]))
    types = [("X", Int64TensorType([None]))]
    onnx_model = skl(model, None, initial_types=types, ml_opset=4)
    test = np.array([40, 10, 20, 30, 30], dtype=np.int64)
    return Built(onnx_model, feeds_for(onnx_model, test), "skl2onnx (LabelEncoder, ml opset 4)")


def ordinal_encoder_strings():
    from skl2onnx.common.data_types import StringTensorType
    from sklearn.preprocessing import OrdinalEncoder

    rng = np.random.default_rng(SEED)
    X = np.stack(
        [rng.choice(["red", "green", "blue"], 50), rng.choice(["s", "m", "l", "xl"], 50)], axis=1
    )
    model = OrdinalEncoder().fit(X)
    types = [("X", StringTensorType([None, 2]))]
    onnx_model = skl(model, None, initial_types=types)
    return Built(onnx_model, feeds_for(onnx_model, X[:12]), "skl2onnx (OrdinalEncoder)")


def dict_vectorizer_tree():
    from skl2onnx.common.data_types import DictionaryType, FloatTensorType, StringTensorType
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.pipeline import make_pipeline
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(SEED)
    keys = ["alpha", "beta", "gamma", "delta"]
    rows = [
        {k: float(rng.normal()) for k in keys if rng.random() < 0.8} or {"alpha": 0.0}
        for _ in range(120)
    ]
    y = [sum(r.values()) for r in rows]
    model = make_pipeline(
        DictVectorizer(sparse=False), DecisionTreeRegressor(max_depth=4, random_state=SEED)
    )
    model.fit(rows, y)
    types = [("X", DictionaryType(StringTensorType([]), FloatTensorType([])))]
    onnx_model = skl(model, None, initial_types=types)
    feeds = [{"X": {"beta": 0.5, "alpha": -1.25}}, {"X": {"gamma": 2.0, "delta": 0.125}}]
    return Built(onnx_model, feeds, "skl2onnx (DictVectorizer)")


def feature_union_scalers():
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline, make_union
    from sklearn.preprocessing import MinMaxScaler, RobustScaler

    est = make_pipeline(
        make_union(MinMaxScaler(), RobustScaler(), PCA(n_components=2, random_state=SEED)),
        LogisticRegression(max_iter=1000),
    )
    return classifier(est, bundled("wine"))


def lightgbm_binary_nan():
    import lightgbm
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    data = bundled("breast_cancer")
    data.X = with_nans(data.X, 0.1, seed=8)
    model = lightgbm.LGBMClassifier(n_estimators=12, num_leaves=8, random_state=SEED, verbose=-1)
    fit(model, data)
    types = [("X", FloatTensorType([None, data.X.shape[1]]))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onnx_model = convert_lightgbm(
            model, initial_types=types, target_opset=ONNXMLTOOLS_OPSET, zipmap=True
        )
    test = np.concatenate([data.test, with_nans(data.test, 0.3, seed=9)])
    return Built(onnx_model, feeds_for(onnx_model, test), "onnxmltools (LightGBM)")


def lightgbm_multiclass():
    import lightgbm
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    data = bundled("iris")
    model = lightgbm.LGBMClassifier(n_estimators=6, num_leaves=6, random_state=SEED, verbose=-1)
    fit(model, data)
    types = [("X", FloatTensorType([None, data.X.shape[1]]))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onnx_model = convert_lightgbm(
            model, initial_types=types, target_opset=ONNXMLTOOLS_OPSET, zipmap=False
        )
    return Built(onnx_model, feeds_for(onnx_model, data.test), "onnxmltools (LightGBM)")


def lightgbm_regressor():
    import lightgbm
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    data = bundled("diabetes")
    model = lightgbm.LGBMRegressor(n_estimators=15, num_leaves=8, random_state=SEED, verbose=-1)
    fit(model, data)
    types = [("X", FloatTensorType([None, data.X.shape[1]]))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onnx_model = convert_lightgbm(model, initial_types=types, target_opset=ONNXMLTOOLS_OPSET)
    test = np.concatenate([data.test, with_nans(data.test, 0.2, seed=10)])
    return Built(onnx_model, feeds_for(onnx_model, test), "onnxmltools (LightGBM)")


def xgboost_binary():
    import xgboost
    from onnxmltools import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    data = bundled("breast_cancer")
    model = xgboost.XGBClassifier(n_estimators=10, max_depth=3, random_state=SEED)
    fit(model, data)
    types = [("X", FloatTensorType([None, data.X.shape[1]]))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onnx_model = convert_xgboost(model, initial_types=types, target_opset=ONNXMLTOOLS_OPSET)
    test = np.concatenate([data.test, with_nans(data.test, 0.2, seed=11)])
    return Built(onnx_model, feeds_for(onnx_model, test), "onnxmltools (XGBoost)")


def xgboost_multiclass():
    import xgboost
    from onnxmltools import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    data = bundled("wine")
    model = xgboost.XGBClassifier(n_estimators=6, max_depth=3, random_state=SEED)
    fit(model, data)
    types = [("X", FloatTensorType([None, data.X.shape[1]]))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onnx_model = convert_xgboost(model, initial_types=types, target_opset=ONNXMLTOOLS_OPSET)
    return Built(onnx_model, feeds_for(onnx_model, data.test), "onnxmltools (XGBoost)")


def xgboost_regressor():
    import xgboost
    from onnxmltools import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    data = bundled("diabetes")
    model = xgboost.XGBRegressor(n_estimators=12, max_depth=3, random_state=SEED)
    fit(model, data)
    types = [("X", FloatTensorType([None, data.X.shape[1]]))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onnx_model = convert_xgboost(model, initial_types=types, target_opset=ONNXMLTOOLS_OPSET)
    test = np.concatenate([data.test, with_nans(data.test, 0.2, seed=12)])
    return Built(onnx_model, feeds_for(onnx_model, test), "onnxmltools (XGBoost)")


# --- graphs no converter writes -----------------------------------------------------------------


def _ml_model(nodes, inputs, outputs, ml_opset=1, opset=OPSET, initializers=()):
    graph = helper.make_graph(nodes, "ml", inputs, outputs, initializer=list(initializers))
    imports = [helper.make_opsetid("ai.onnx.ml", ml_opset)]
    if opset is not None:
        imports.insert(0, helper.make_opsetid("", opset))
    model = helper.make_model(graph, opset_imports=imports, producer_name="make_ml_models")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def cast_map_and_category_mapper():
    """CastMap (DENSE to float, SPARSE to int64) of a map input, and CategoryMapper both ways."""
    nodes = [
        helper.make_node(
            "CastMap", ["M"], ["dense"], domain="ai.onnx.ml", cast_to="TO_FLOAT", map_form="DENSE"
        ),
        helper.make_node(
            "CastMap",
            ["M"],
            ["sparse"],
            domain="ai.onnx.ml",
            cast_to="TO_INT64",
            map_form="SPARSE",
            max_map=8,
        ),
        helper.make_node(
            "CategoryMapper",
            ["S"],
            ["codes"],
            domain="ai.onnx.ml",
            cats_strings=["a", "b", "c\n'quoted'"],
            cats_int64s=[7, 8, 9],
            default_int64=-5,
        ),
        helper.make_node(
            "CategoryMapper",
            ["codes"],
            ["names"],
            domain="ai.onnx.ml",
            cats_strings=["a", "b", "c\n'quoted'"],
            cats_int64s=[7, 8, 9],
            default_string="unknown",
        ),
    ]
    map_type = helper.make_map_type_proto(
        TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, [])
    )
    inputs = [
        helper.make_value_info("M", map_type),
        helper.make_tensor_value_info("S", TensorProto.STRING, ["N", 2]),
    ]
    outputs = [
        helper.make_tensor_value_info("dense", TensorProto.FLOAT, [1, None]),
        helper.make_tensor_value_info("sparse", TensorProto.INT64, [1, 8]),
        helper.make_tensor_value_info("codes", TensorProto.INT64, ["N", 2]),
        helper.make_tensor_value_info("names", TensorProto.STRING, ["N", 2]),
    ]
    model = _ml_model(nodes, inputs, outputs)
    S = np.array([["a", "zz"], ["c\n'quoted'", "b"], ["", "a"]])
    feeds = [
        {"M": {5: 2.5, 1: -1.0, 3: 7.25}, "S": S},
        {"M": {0: 1.5}, "S": S[:1]},
    ]
    return Built(model, feeds, "onnx.helper")


def array_feature_extractor_strings():
    """ArrayFeatureExtractor over a string tensor and a float tensor, then FeatureVectorizer."""
    nodes = [
        helper.make_node("ArrayFeatureExtractor", ["S", "idx"], ["picked"], domain="ai.onnx.ml"),
        helper.make_node("ArrayFeatureExtractor", ["X", "idx"], ["cols"], domain="ai.onnx.ml"),
        helper.make_node(
            "FeatureVectorizer",
            ["cols", "X"],
            ["features"],
            domain="ai.onnx.ml",
            inputdimensions=[2, 3],  # X's 4 columns cut to 3
        ),
        helper.make_node(
            "FeatureVectorizer", ["I"], ["ints"], domain="ai.onnx.ml", inputdimensions=[3]
        ),  # I's 2 columns padded with a zero
        helper.make_node(
            "Imputer",
            ["X"],
            ["filled"],
            domain="ai.onnx.ml",
            imputed_value_floats=[0.5],
            replaced_value_float=float("nan"),
        ),
    ]
    idx = numpy_helper.from_array(np.array([2, 0], dtype=np.int64), "idx")
    inputs = [
        helper.make_tensor_value_info("S", TensorProto.STRING, ["N", 3]),
        helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 4]),
        helper.make_tensor_value_info("I", TensorProto.INT64, ["N", 2]),
    ]
    outputs = [
        helper.make_tensor_value_info("picked", TensorProto.STRING, ["N", 2]),
        helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", 5]),
        helper.make_tensor_value_info("ints", TensorProto.FLOAT, ["N", 3]),
        helper.make_tensor_value_info("filled", TensorProto.FLOAT, ["N", 4]),
    ]
    model = _ml_model(nodes, inputs, outputs, initializers=[idx])
    rng = np.random.default_rng(SEED)
    X = rng.normal(size=(5, 4)).astype(np.float32)
    X[1, 2] = np.nan
    S = np.array(
        [["x", "y", "z"], ["1", "2", "3"], ["é", "ß", "∂"], ["", " ", "  "], ["a", "b", "c"]]
    )
    I = rng.integers(-3, 3, size=(5, 2)).astype(np.int64)
    return Built(
        model, [{"S": S, "X": X, "I": I}, {"S": S[:1], "X": X[:1], "I": I[:1]}], "onnx.helper"
    )


def _tree_ensemble_v5(regressor: onnx.NodeProto, dtype=np.float32, tree=None) -> onnx.NodeProto:
    """A TreeEnsembleRegressor (ml opset 1-3) rewritten as the TreeEnsemble of ml opset 5: interior
    nodes only, leaves as their own arrays. Given scikit-learn's `tree` (one tree, node ids in its
    order, as skl2onnx writes them), splits and leaf values are its double ones."""
    a = {x.name: helper.get_attribute_value(x) for x in regressor.attribute}
    tree_ids, node_ids, modes = a["nodes_treeids"], a["nodes_nodeids"], a["nodes_modes"]
    position = {(t, n): i for i, (t, n) in enumerate(zip(tree_ids, node_ids))}
    interior = [i for i, m in enumerate(modes) if m != b"LEAF"]
    leaves = [i for i, m in enumerate(modes) if m == b"LEAF"]
    interior_at = {i: k for k, i in enumerate(interior)}
    leaf_at = {i: k for k, i in enumerate(leaves)}
    weights = {}
    for t, n, target, w in zip(
        a["target_treeids"], a["target_nodeids"], a["target_ids"], a["target_weights"]
    ):
        weights[position[(t, n)]] = (target, w)

    def child(i, ids):
        j = position[(tree_ids[i], ids[i])]
        return (leaf_at[j], 1) if j in leaf_at else (interior_at[j], 0)

    true = [child(i, a["nodes_truenodeids"]) for i in interior]
    false = [child(i, a["nodes_falsenodeids"]) for i in interior]
    roots = [interior_at[position[(t, 0)]] for t in sorted(set(tree_ids))]
    splits = list(a["nodes_values"])
    values = {i: w for i, (_, w) in weights.items()}
    if tree is not None:
        splits = [tree.threshold[node_ids[i]] for i in range(len(modes))]
        values = {i: tree.value[node_ids[i]].ravel()[0] for i in leaves}
    mode_code = {b"BRANCH_LEQ": 0, b"BRANCH_LT": 1, b"BRANCH_GTE": 2, b"BRANCH_GT": 3}
    return helper.make_node(
        "TreeEnsemble",
        list(regressor.input),
        list(regressor.output),
        domain="ai.onnx.ml",
        n_targets=a.get("n_targets", 1),
        aggregate_function={b"SUM": 1, b"AVERAGE": 0}[a.get("aggregate_function", b"SUM")],
        post_transform=0,
        tree_roots=roots,
        nodes_modes=numpy_helper.from_array(
            np.array([mode_code[modes[i]] for i in interior], np.uint8)
        ),
        nodes_featureids=[a["nodes_featureids"][i] for i in interior],
        nodes_splits=numpy_helper.from_array(np.array([splits[i] for i in interior], dtype)),
        nodes_truenodeids=[c for c, _ in true],
        nodes_trueleafs=[leaf for _, leaf in true],
        nodes_falsenodeids=[c for c, _ in false],
        nodes_falseleafs=[leaf for _, leaf in false],
        nodes_missing_value_tracks_true=[
            a.get("nodes_missing_value_tracks_true", [0] * len(modes))[i] for i in interior
        ],
        leaf_targetids=[weights[i][0] for i in leaves],
        leaf_weights=numpy_helper.from_array(np.array([values[i] for i in leaves], dtype)),
    )


def tree_ensemble_v5_forest():
    """A random forest regressor's trees as ml-opset-5 TreeEnsemble (AVERAGE), in a graph that
    imports no default-domain opset at all."""
    from sklearn.ensemble import RandomForestRegressor

    data = bundled("diabetes")
    model = fit(RandomForestRegressor(n_estimators=4, max_depth=4, random_state=SEED), data)
    converted = skl(model, data.X, ml_opset=3)
    (node,) = [n for n in converted.graph.node if n.op_type == "TreeEnsembleRegressor"]
    # skl2onnx writes the forest's average as base weights divided by the tree count: the v5
    # operator takes AVERAGE directly.
    v5 = _tree_ensemble_v5(node)
    v5.input[:] = ["X"]
    v5.output[:] = ["variable"]
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, data.X.shape[1]])]
    outputs = [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 1])]
    onnx_model = _ml_model([v5], inputs, outputs, ml_opset=5, opset=None)
    test = np.concatenate([data.test, threshold_rows(converted, data.test)])
    return Built(onnx_model, feeds_for(onnx_model, test), "skl2onnx, rewritten to TreeEnsemble-5")


BUILDERS: dict[str, Callable[[], Built]] = {
    f.__name__: f
    for f in [
        scaler_standard,
        pipeline_minmax_logreg,
        logreg_binary,
        logreg_binary_nozipmap,
        logreg_multi_nozipmap,
        logreg_string_labels,
        sgd_binary_string_labels,
        linear_regression,
        linear_regression_two_targets,
        normalizers,
        binarizer_scaler,
        imputer_scaler_logreg,
        linear_svc,
        linear_svc_binary,
        svc_rbf_proba,
        svc_rbf_binary,
        svc_poly_multiclass,
        svc_sigmoid_proba_strings,
        svr_rbf,
        linear_svr,
        one_class_svm,
        decision_tree_classifier,
        decision_tree_regressor,
        tree_ensemble_v5_double,
        random_forest_classifier,
        random_forest_classifier_strings_nozipmap,
        random_forest_regressor,
        extra_trees_regressor_two_targets,
        gradient_boosting_binary,
        gradient_boosting_multiclass,
        gradient_boosting_regressor,
        hist_gradient_boosting_nan_binary,
        hist_gradient_boosting_nan_multiclass,
        hist_gradient_boosting_nan_regressor,
        column_transformer_strings,
        column_transformer_trees,
        onehot_int_categories,
        label_encoder_strings,
        label_encoder_ints_opset4,
        ordinal_encoder_strings,
        dict_vectorizer_tree,
        feature_union_scalers,
        lightgbm_binary_nan,
        lightgbm_multiclass,
        lightgbm_regressor,
        xgboost_binary,
        xgboost_multiclass,
        xgboost_regressor,
        cast_map_and_category_mapper,
        array_feature_extractor_strings,
        tree_ensemble_v5_forest,
    ]
}


def feed_arrays(feeds: list[dict]) -> dict[str, np.ndarray]:
    """The npz entries of the feed sets (see the module docstring)."""
    arrays = {}
    for k, feed in enumerate(feeds):
        for name, value in feed.items():
            if isinstance(value, dict):
                keys = list(value)
                arrays[f"{k}:mapkeys:{name}"] = np.array(keys)
                arrays[f"{k}:mapvalues:{name}"] = np.array([value[key] for key in keys])
            else:
                value = np.asarray(value)
                arrays[f"{k}:input:{name}"] = value.astype(str) if value.dtype == object else value
    return arrays


def run_onnxruntime(model: onnx.ModelProto, feeds: dict):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)


def _nodes(graph):
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield from _nodes(attribute.g)


def build(name: str, out: Path) -> dict:
    built = BUILDERS[name]()
    model = built.model
    # Rebuilding gives the same bytes: onnxmltools names the graph with a random uuid, and the
    # converters list the opset imports in set order.
    if re.fullmatch(r"[0-9a-f]{32}", model.graph.name):
        model.graph.name = name
    imports = sorted(model.opset_import, key=lambda o: o.domain)
    del model.opset_import[:]
    model.opset_import.extend(imports)
    for feeds in built.feeds:  # the converted model must run in onnxruntime as it is
        run_onnxruntime(
            model,
            {
                k: (
                    v.astype(object)
                    if getattr(v, "dtype", None) is not None and v.dtype.kind == "U"
                    else v
                )
                for k, v in feeds.items()
            },
        )
    path = out / f"{name}.onnx"
    onnx.save(model, path)
    write_npz(out / f"{name}.npz", feed_arrays(built.feeds))
    opsets = ", ".join(
        f"{o.domain or 'ai.onnx'} {o.version}"
        for o in sorted(model.opset_import, key=lambda o: o.domain)
    )
    ops = sorted({(n.domain + ":" if n.domain else "") + n.op_type for n in _nodes(model.graph)})
    return {
        "name": name,
        "made_by": built.made_by,
        "opsets": opsets,
        "bytes": path.stat().st_size,
        "ops": ops,
    }


def write_readme(out: Path, rows: list[dict]) -> None:
    lines = [
        "# scikit-learn, LightGBM and XGBoost models converted to ONNX",
        "",
        "Built by `tools/make_ml_models.py` (needs the `ml-models` extra: `.venv/bin/pip install -e "
        '".[ml-models]"`, then `.venv/bin/python -m tools.make_ml_models`); checked by '
        "`tests/test_ml_models.py` against onnxruntime 1.31.1. `NAME.npz` holds the feed sets "
        "(see the tool's docstring).",
        "",
        "| model | made by | opsets | bytes | operators |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['name']} | {row['made_by']} | {row['opsets']} | {row['bytes']} | "
            f"{', '.join(row['ops'])} |"
        )
    total = sum(row["bytes"] for row in rows)
    lines += ["", f"{len(rows)} models, {total} bytes of .onnx in all.", ""]
    (out / "README.md").write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    names = args.only or list(BUILDERS)
    rows = []
    for name in names:
        rows.append(build(name, args.out))
        print(f"{name}: {rows[-1]['bytes']} bytes, {', '.join(rows[-1]['ops'])}")
    if not args.only:
        write_readme(args.out, rows)


if __name__ == "__main__":
    main()
