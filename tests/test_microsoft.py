"""The com.microsoft domain (issue #14, points 4 and 5): every case of the com.microsoft oracle
(tests/harness/microsoft_oracle.py) in both variants against onnxruntime 1.31.1, also with the graph's
shapes hidden; the table's coverage; the registrations against onnxruntime's own schemas.

No expected value is written here: onnxruntime computes it. In the exact variant a refusal is an
expected outcome, provided it names the operator (none of the table's cases is refused now).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onemodel_compile.resolve
import runtime_support as rt
from onemodel_compile import (
    CompileError,
    UnsupportedError,
    compile_model,
    generate,
    onnxruntime_types,
)
from onemodel_compile.ops import microsoft
from onemodel_compile.ops.registry import lookup, registered
from tests import models
from tests.harness import microsoft_oracle as oracle

VARIANTS = ("fast", "exact")
# The registrations of this family: com.microsoft's, and the default-domain operators only
# onnxruntime defines (their opset ranges are onnxruntime's, not onnx's).
MICROSOFT = [
    e
    for e in registered()
    if e.domain == microsoft.DOMAIN or (e.domain == "" and e.op_type in oracle.DEFAULT_DOMAIN
                                         and e.emit.__module__ == microsoft.__name__)
]  # fmt: skip


def _onnxruntime_schemas() -> dict:
    from onnxruntime.capi import onnxruntime_pybind11_state as ort

    return {(s.domain, s.name, s.since_version): s for s in ort.get_all_operator_schema()}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", oracle.CASES, ids=lambda case: case.name)
def test_operator_matches_onnxruntime(case, variant):
    outcome = oracle.run_case(case, variant)
    if outcome.status == "refused":
        assert variant == "exact", f"the {variant} variant refused: {outcome.detail}"
        assert case.op in outcome.detail, f"the refusal does not name {case.op}: {outcome.detail}"
        assert "no exact implementation" in outcome.detail, outcome.detail
        return
    if outcome.status == "divergence":
        pytest.xfail(f"onnxruntime diverges: {outcome.detail}")
    assert outcome.status == "pass", f"{outcome.status}: {outcome.detail}"


def test_every_emitter_takes_an_unknown_rank(monkeypatch):
    """Every case compiled with its graph's shapes hidden still gives onnxruntime's outputs
    (fast variant), and every registration of the family is handed an input of unknown rank on
    the way (the rule tests/test_unknown_rank.py holds the other emitters to)."""
    exercised: set = set()
    original = onemodel_compile.resolve.lookup

    def recording(*args, **kwargs):
        entry = original(*args, **kwargs)

        def emit(view, entry=entry):
            if any(x is not None and getattr(x.type, "shape", 0) is None for x in view.inputs):
                exercised.add((entry.domain, entry.op_type, entry.since))
            return entry.emit(view)

        return dataclasses.replace(entry, emit=emit)

    monkeypatch.setattr(onemodel_compile.resolve, "lookup", recording)
    failures = []
    for case in oracle.CASES:
        outcome = oracle.run_case(case, "fast", hide_shapes=True)
        if outcome.status != "pass":
            failures.append(f"{case.name}: {outcome.status}: {outcome.detail}")
    assert not failures, failures[:5]
    every = {(e.domain, e.op_type, e.since) for e in MICROSOFT}
    assert not every - exercised, sorted(every - exercised)


# --- the table ------------------------------------------------------------------------------------


def test_table_covers_every_registration_twice():
    names = [case.name for case in oracle.CASES]
    assert len(names) == len(set(names)), "case names must be unique (test ids)"
    counts = {op: sum(case.op == op for case in oracle.CASES) for op in oracle.OPERATORS}
    assert all(n >= 2 for n in counts.values()), {op: n for op, n in counts.items() if n < 2}
    assert {e.op_type for e in MICROSOFT} == set(oracle.OPERATORS)
    assert {case.op for case in oracle.CASES} == set(oracle.OPERATORS)


def test_looser_tolerances_say_why():
    for case in oracle.CASES:
        if case.rtol is not None or case.atol is not None:
            assert case.note, f"{case.name}: a looser tolerance needs a note"


def test_the_harness_can_fail(monkeypatch):
    """A kernel that is off by one ulp in one element is caught (integers compare exactly)."""
    import runtime_support

    right = runtime_support.murmur_hash3

    def wrong(X, **kwargs):
        result = right(X, **kwargs).copy()
        result.reshape(-1)[0] += 1
        return result

    monkeypatch.setattr(runtime_support, "murmur_hash3", wrong)
    case = next(c for c in oracle.CASES if c.op == "MurmurHash3")
    assert oracle.run_case(case, "fast").status == "mismatch"


def test_kernel_names_are_the_family_s_own():
    """runtime_support re-exports every family's kernels into one namespace (`rt`): a kernel
    named like another family's would replace it (an `attention` did, once)."""
    import importlib
    import pkgutil

    import runtime_support
    from runtime_support import microsoft as kernels

    others = set()
    for info in pkgutil.iter_modules(runtime_support.__path__):
        if info.name.startswith("_") or info.name == "microsoft":
            continue
        others |= set(
            getattr(importlib.import_module(f"runtime_support.{info.name}"), "__all__", ())
        )
    assert not set(kernels.__all__) & others, sorted(set(kernels.__all__) & others)
    for name in kernels.__all__:
        assert getattr(runtime_support, name) is getattr(kernels, name), name


# --- the registrations --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry", MICROSOFT, ids=lambda e: f"{e.domain or 'ai.onnx'}:{e.op_type}:{e.since}"
)
def test_registration_is_an_onnxruntime_schema(entry):
    """Each registration names an operator onnxruntime 1.31.1 defines at that domain opset, and
    the defaults it declares are onnxruntime's."""
    schemas = _onnxruntime_schemas()
    schema = schemas.get((entry.domain, entry.op_type, entry.since))
    assert schema is not None, f"onnxruntime has no {entry.op_type} at opset {entry.since}"
    for name, value in onnxruntime_types.DEFAULTS[(entry.domain, entry.op_type)].items():
        attribute = schema.attributes.get(name)
        assert attribute is not None, f"{entry.op_type} has no attribute {name!r}"
        raw = attribute._default_value
        proto = onnx.AttributeProto.FromString(raw) if isinstance(raw, bytes) else None
        if proto is None or not proto.type:
            continue  # no schema default: the kernel's own (docs/com-microsoft.md)
        expected = helper.get_attribute_value(proto)
        expected = expected.decode() if isinstance(expected, bytes) else expected
        if isinstance(expected, float):
            assert np.float32(value) == np.float32(expected), (name, value, expected)
        else:
            assert value == expected, (name, value, expected)


@pytest.mark.parametrize(
    "entry", MICROSOFT, ids=lambda e: f"{e.domain or 'ai.onnx'}:{e.op_type}:{e.since}"
)
def test_required_attributes_are_onnxruntime_s(entry):
    """What onnxruntime's schema requires either has a declared default (the kernel's, where the
    schema is younger than the models: Crop's border) or is required here too: a node without it
    is a compile error naming the node, not a failure at run time."""
    schema = _onnxruntime_schemas()[(entry.domain, entry.op_type, entry.since)]
    needed = {name for name, attribute in schema.attributes.items() if attribute.required}
    declared = set(microsoft.REQUIRED[(entry.domain, entry.op_type)])
    defaults = set(onnxruntime_types.DEFAULTS[(entry.domain, entry.op_type)])
    assert needed <= declared | defaults, sorted(needed - declared - defaults)
    assert declared <= needed, sorted(declared - needed)


def test_a_missing_required_attribute_names_the_node():
    node = helper.make_node("MatMulNBits", ["a", "b", "s"], ["y"], domain=microsoft.DOMAIN, N=2)
    inputs = [
        helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [1, 32]),
        helper.make_tensor_value_info("b", onnx.TensorProto.UINT8, [2, 1, 16]),
        helper.make_tensor_value_info("s", onnx.TensorProto.FLOAT, [2]),
    ]
    out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 2])
    graph = helper.make_graph([node], "g", inputs, [out])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    with pytest.raises(CompileError, match=r"MatMulNBits node \(unnamed\): .* attribute 'K'"):
        generate(model)


def test_the_domain_is_opset_one_only():
    entries = [e for e in MICROSOFT if e.domain == microsoft.DOMAIN]
    assert entries and all(e.since == 1 and e.until is None for e in entries)
    node = helper.make_node("Gelu", ["x"], ["y"], domain=microsoft.DOMAIN)
    value = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])
    out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])
    graph = helper.make_graph([node], "g", [value], [out])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 2)]
    )
    with pytest.raises(UnsupportedError, match="com.microsoft opset 2 is outside"):
        generate(model)


def test_unsupported_operator_names_itself():
    with pytest.raises(UnsupportedError, match=r"SparseToDenseMatMul \(domain 'com.microsoft'\)"):
        lookup("SparseToDenseMatMul", microsoft.DOMAIN, 1, "fast", "SparseToDenseMatMul node 's'")


# --- the generation loops -------------------------------------------------------------------------


def _generation_case(name: str, **changes):
    case = next(c for c in oracle.CASES if c.name == name)
    return dataclasses.replace(case, **changes)


def test_minstd_rand0_is_the_standard_s():
    """Sampling draws from libstdc++'s std::default_random_engine (minstd_rand0): the C++
    standard fixes its 10000th value from the default seed (1) at 1043618065."""
    generator = rt.microsoft._MinstdRand0(1)
    for _ in range(9999):
        generator._next()
    assert generator._next() == 1043618065


@pytest.mark.parametrize("variant", VARIANTS)
def test_sampling_without_a_seed_is_seed_zero(variant, tmp_path):
    """onnxruntime's Sampling without its seed input draws as with seed 0 (minstd_rand0 takes 0
    as 1, so seed 1 too), every run the same; so does the compiled module (the oracle's
    ms_sampling_unseeded compares the tokens with onnxruntime's)."""
    case = _generation_case("ms_sampling_top_p")
    results = []
    for seed in (None, 0, 1):
        inputs = case.inputs[:8] + (() if seed is None else (oracle.v(np.array([seed], np.int32),
                                                                         "int32"),))  # fmt: skip
        model, feeds = oracle.build(dataclasses.replace(case, inputs=inputs))
        module = models.import_generated(compile_model(model, tmp_path / f"m{seed}.py", variant))
        results.append(module.run(*feeds.values())[0])
    assert all(np.array_equal(results[0], r) for r in results[1:])


@pytest.mark.parametrize(
    "name, changes, message",
    [
        # onnxruntime 1.31.1's GreedySearch and Sampling kernels take model_type 0 only
        ("ms_greedy_search", {"model_type": 1}, "model_type 1 is not supported"),
        ("ms_sampling_top_p", {"model_type": 1}, "model_type 1 is not supported"),
        ("ms_beam_search", {"model_type": 3}, "model_type 3 is not supported"),
        ("ms_whisper_beam_search", {"model_type": 1}, "model_type 1 is not supported"),
        ("ms_whisper_beam_search", {"decoder_output_cross_qk": 1}, "decoder_output_cross_qk"),
        ("ms_sampling_top_p", {"custom": 1}, "custom=1 is not supported"),
        # an encoder without decoder_input_ids returns no encoder_hidden_states for a decoder
        # that takes them (onnxruntime's kernel fails on it when it runs)
        ("ms_beam_search_t5", {"encoder": oracle.t5_models(seed=21, init_decoder=False)[0]},
         "takes encoder_hidden_states but its encoder does not return them"),
        ("ms_beam_search_t5", {"decoder": oracle.t5_models(seed=21, layers=2)[1]},
         "must have onnxruntime's T5 form"),
    ],
)  # fmt: skip
def test_generation_refuses_what_it_does_not_run(name, changes, message):
    case = _generation_case(name)
    model, _ = oracle.build(case)
    node = model.graph.node[0]
    kept = [a for a in node.attribute if a.name not in changes]
    del node.attribute[:]
    node.attribute.extend(kept + [helper.make_attribute(k, v) for k, v in changes.items()])
    with pytest.raises(UnsupportedError, match=f"{case.op} node '{name}'.*{message}"):
        generate(model)


@pytest.mark.parametrize(
    "position, name",
    [(11, "logits_processor"), (12, "cross_qk_layer_head"), (13, "extra_decoding_ids"),
     (14, "temperature")],
)  # fmt: skip
def test_whisper_beam_search_refuses_its_whisper_only_inputs(position, name):
    """The timestamp logits processor, cross_qk, extra_decoding_ids and temperature are not
    compiled (docs/com-microsoft.md "WhisperBeamSearch"): a node using one is refused, naming
    the node and the input."""
    model, _ = oracle.build(_generation_case("ms_whisper_beam_search"))
    node = model.graph.node[0]
    inputs = list(node.input) + [""] * (position + 1 - len(node.input))
    inputs[position] = "extra"
    del node.input[:]
    node.input.extend(inputs)
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array([1], np.int32), "extra"))
    with pytest.raises(UnsupportedError, match=f"node 'ms_whisper_beam_search'.*{name} input"):
        generate(model)


def test_whisper_beam_search_refuses_non_speech_probs():
    model, _ = oracle.build(_generation_case("ms_whisper_beam_search"))
    node = model.graph.node[0]
    node.output.extend(["", "non_speech"])
    model.graph.output.append(helper.make_tensor_value_info("non_speech", TensorProto.FLOAT, [2]))
    with pytest.raises(UnsupportedError, match="non_speech_probs output is not supported"):
        generate(model)


def test_encoder_decoder_beam_search_needs_its_start_token():
    """model_type 1 without decoder_start_token_id (-1, the schema's default): onnxruntime
    refuses the session; the compiler refuses the node, naming it."""
    model, _ = oracle.build(_generation_case("ms_beam_search_t5"))
    node = model.graph.node[0]
    (start,) = [a for a in node.attribute if a.name == "decoder_start_token_id"]
    start.i = -1
    with pytest.raises(CompileError, match="BeamSearch node 'ms_beam_search_t5'.*decoder_start"):
        generate(model)


def test_encoder_decoder_beam_search_refuses_max_length_2(tmp_path):
    """At max_length 2 onnxruntime's encoder-decoder loop skips the encoder's step and runs the
    decoder on input_ids it never wrote (its Gather fails on them, or it returns tokens from
    them): the module refuses the run instead."""
    model, feeds = oracle.build(_generation_case("ms_beam_search_t5"))
    (max_length,) = [t for t in model.graph.initializer if t.name == "in1"]
    max_length.CopyFrom(onnx.numpy_helper.from_array(np.array([2], np.int32), "in1"))
    module = models.import_generated(compile_model(model, tmp_path / "m.py"))
    with pytest.raises(ValueError, match="max_length \\(2\\) must be at least 3"):
        module.run_feeds(feeds)


def test_layer_normalization_before_17_is_onnxruntime_s_only():
    """onnx defines LayerNormalization from opset 17; onnxruntime from 1 (its optimizer writes it
    into models of older opsets): the family registers 1..16, the normalization family 17 on."""
    entries = [e for e in registered() if e.op_type == "LayerNormalization" and not e.domain]
    ranges = sorted((e.since, e.until) for e in entries if e.variant is None)
    assert ranges[0] == (1, 16) and ranges[1][0] == 17


# --- end to end: what onnxruntime's own tools write -----------------------------------------------

REAL_MODELS = Path(__file__).resolve().parent / "real_models"
# (model, the optimizer's model type): the exports of tests/real_models/ the optimizer fuses
# (bert: EmbedLayerNormalization, Attention, BiasGelu, then QEmbedLayerNormalization, QAttention;
# gpt2 at opset 14: FastGelu and the default domain's LayerNormalization before 17; llama: the
# simplified normalizations)
OPTIMIZED = [
    ("bert_legacy_op14", "bert"),
    ("gpt2_legacy_op14", "gpt2"),
    pytest.param("llama_legacy_op17", "bert", marks=pytest.mark.slow),
]


def _real_feeds(name: str, k: int) -> dict:
    data = np.load(REAL_MODELS / f"{name}.npz")
    prefix = f"{k}:input:"
    return {key[len(prefix) :]: data[key] for key in data.files if key.startswith(prefix)}


@pytest.mark.parametrize("name,kind", OPTIMIZED, ids=["bert", "gpt2", "llama"])
def test_onnxruntime_optimized_and_quantized_models(name, kind, tmp_path):
    """onnxruntime's transformer optimizer, then its dynamic quantizer, run on a real export:
    both results compile in both variants and give onnxruntime's outputs on the model's feeds."""
    import warnings

    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    from onnxruntime.transformers.optimizer import optimize_model

    from onemodel_compile import load_compiled

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optimized = optimize_model(str(REAL_MODELS / f"{name}.onnx"), model_type=kind, opt_level=0)
        optimized_path = tmp_path / "optimized.onnx"
        optimized.save_model_to_file(str(optimized_path))
        inferred = SymbolicShapeInference.infer_shapes(onnx.load(optimized_path), auto_merge=True)
        onnx.save(inferred, tmp_path / "inferred.onnx")
        quantized_path = tmp_path / "quantized.onnx"
        quantize_dynamic(tmp_path / "inferred.onnx", quantized_path, weight_type=QuantType.QInt8)
    fused = {
        n.op_type for n in onnx.load(quantized_path).graph.node if n.domain == microsoft.DOMAIN
    }
    assert fused, "the optimizer fused nothing: the test would check nothing of this family"
    for path in (optimized_path, quantized_path):
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        for variant in VARIANTS:
            module = load_compiled(str(path), variant=variant)
            for k in (0, 1):
                feeds = _real_feeds(name, k)
                expected = session.run(None, feeds)
                actual = module.run_feeds(feeds)
                for e, (output, a) in zip(expected, actual.items()):
                    assert a.shape == e.shape, (path.name, variant, output)
                    np.testing.assert_allclose(
                        a, e, rtol=1e-4, atol=1e-5, err_msg=f"{path.name} {variant} {output}"
                    )


def test_a_malformed_node_of_onnxruntimes_own_operators_is_no_internal_error(tmp_path):
    """Found by make fuzz: onnxruntime's pre-17 LayerNormalization on a scalar made the type rule
    divide by its rank; the types stay unknown and the run names the node."""
    graph = helper.make_graph(
        [helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln")],
        "scalar_layer_norm",
        [models.tensor("x", []), models.tensor("s", [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    module = models.import_generated(compile_model(models.finish(graph, 13), tmp_path / "m.py"))
    with pytest.raises(rt.NodeError, match="LayerNormalization 'ln'"):
        module.run(np.float32(2.0), np.float32(1.0))


# --- DynamicQuantizeLSTM's step quantization -----------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 64, 1), (2, 4, 3), (4, 2)], ids=str)
@pytest.mark.parametrize("sign", ["mixed", "positive", "negative", "zero"])
def test_dqlstm_step_quantizes_each_direction_as_dynamic_quantize_linear(shape, sign):
    """The fast loop's quantization of the stacked states (microsoft._quantized_states) gives,
    for each direction's [hidden, batch] state, DynamicQuantizeLinear's integers minus its zero
    point and its scale (rt.dynamic_quantize_linear, checked against onnxruntime by the oracle's
    DynamicQuantizeLinear cases); the directions' ranges differ, so one shared scale would fail."""
    from runtime_support import microsoft as kernels

    rng = np.random.default_rng(7)
    h = (rng.standard_normal(shape) * np.linspace(0.2, 1.0, np.prod(shape[:-2], dtype=int) or 1)
         .reshape(shape[:-2] + (1, 1))).astype(np.float32)  # fmt: skip
    h = {"mixed": h, "positive": np.abs(h), "negative": -np.abs(h), "zero": 0 * h}[sign]
    shifted, scale = kernels._quantized_states(h)
    states = h.reshape((-1,) + shape[-2:])
    scales = np.broadcast_to(scale, shifted.shape).reshape(states.shape)
    for d, state in enumerate(states):
        q, q_scale, q_zero = rt.dynamic_quantize_linear(state)
        expected = q.astype(np.int32) - np.int32(q_zero)
        np.testing.assert_array_equal(shifted.reshape(states.shape)[d], expected, err_msg=f"{d}")
        assert shifted.dtype == np.float32
        assert (scales[d] == q_scale).all(), (d, scales[d].ravel()[0], q_scale)


# --- Inverse in the exact variant -----------------------------------------------------------------


def test_exact_inverse_pivots_and_is_exact_where_the_inverse_is():
    """Gauss-Jordan with partial pivoting: a zero on the diagonal needs a row swap; a unimodular
    integer matrix has an integer inverse every step of which is exact; a random batch agrees
    with LAPACK's (numpy.linalg.inv); a singular matrix gives inf or NaN, not an exception."""
    swap = np.array([[0.0, 2.0], [4.0, 0.0]], np.float32)
    assert np.array_equal(rt.exact_inverse(swap), np.array([[0, 0.25], [0.5, 0]], np.float32))
    unimodular = np.array([[2, 1, 0], [1, 1, 0], [0, 3, 1]], np.float64)
    expected = np.array([[1, -1, 0], [-1, 2, 0], [3, -6, 1]], np.float64)
    assert np.array_equal(rt.exact_inverse(unimodular), expected)
    batch = np.random.default_rng(5).standard_normal((4, 5, 5))
    np.testing.assert_allclose(rt.exact_inverse(batch), np.linalg.inv(batch), rtol=1e-9, atol=1e-12)
    half = rt.exact_inverse(batch[0].astype(np.float16))
    assert half.dtype == np.float16
    assert not np.isfinite(rt.exact_inverse(np.ones((2, 2), np.float32))).all()


# --- mixture of experts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, changes, message",
    [
        ("ms_moe_swiglu", {"swiglu_fusion": 2}, "swiglu_fusion=2 is not supported"),
        ("ms_moe_relu_top1", {"use_sparse_mixer": 1}, "use_sparse_mixer=1 is not supported"),
        ("ms_qmoe_int4_rows", {"quant_type": "fp4"}, "quant_type 'fp4' is not supported"),
        ("ms_qmoe_int4_rows", {"weights_prepacked": 1}, "weights_prepacked=1 is not supported"),
        (
            "ms_qmoe_int4_blocks_zero_points_gelu",
            {"accuracy_level": 4},
            "accuracy_level 4 is not supported",
        ),
    ],
)
def test_moe_refuses_what_onnxruntime_computes_otherwise(name, changes, message):
    """What onnxruntime's CPU kernels refuse (other swiglu layouts), or compute in a way the
    compiler does not reproduce (int8 activations), is refused naming the node."""
    case = _generation_case(name)
    model, _ = oracle.build(case)
    node = model.graph.node[0]
    kept = [a for a in node.attribute if a.name not in changes]
    del node.attribute[:]
    node.attribute.extend(kept + [helper.make_attribute(k, v) for k, v in changes.items()])
    with pytest.raises(UnsupportedError, match=f"{case.op} node '{name}'.*{message}"):
        generate(model)


def _attn_lstm_model(name, changes=None, drop_input=None, double=False):
    """The oracle's AttnLSTM case `name` with attributes changed (None: removed), an input left
    out, or every float made float64."""
    case = next(c for c in oracle.CASES if c.name == name)
    model, feeds = oracle.build(case)
    node = model.graph.node[0]
    changes = changes or {}
    kept = [a for a in node.attribute if a.name not in changes]
    del node.attribute[:]
    node.attribute.extend(kept)
    node.attribute.extend(helper.make_attribute(k, v) for k, v in changes.items() if v is not None)
    if drop_input is not None:
        node.input[drop_input] = ""
    if double:
        for value in [*model.graph.input, *model.graph.output]:
            if value.type.tensor_type.elem_type == TensorProto.FLOAT:
                value.type.tensor_type.elem_type = TensorProto.DOUBLE
        for i, init in enumerate(model.graph.initializer):
            array = onnx.numpy_helper.to_array(init)
            if array.dtype == np.float32:
                model.graph.initializer[i].CopyFrom(
                    onnx.numpy_helper.from_array(array.astype(np.float64), init.name)
                )
        feeds = {k: a.astype(np.float64) if a.dtype == np.float32 else a for k, a in feeds.items()}
    return case, model, feeds


@pytest.mark.parametrize(
    "name, changes, message",
    [
        ("ms_attn_lstm", {"hidden_size": None}, "positive attribute 'hidden_size'"),
        ("ms_attn_lstm", {"clip": 0.0}, "clip=0.0"),
        (
            "ms_attn_lstm_bidirectional_layer_lengths",
            {"activations": ["Sigmoid", "Tanh", "Tanh"]},
            "'activations' lists 3 functions, onnxruntime takes 6",
        ),
    ],
)
def test_attn_lstm_refuses_what_onnxruntime_refuses(name, changes, message):
    """onnxruntime's CPU kernel fails on these nodes (checked here); the compiler refuses them
    naming the node and the attribute."""
    case, model, feeds = _attn_lstm_model(name, changes)
    with pytest.raises(Exception, match="hidden_size|clip_|activation_func_names"):
        oracle.run_onnxruntime(model, feeds)
    with pytest.raises(UnsupportedError, match=f"AttnLSTM node '{name}'.*{message}"):
        generate(model)


def test_attn_lstm_refuses_float64_and_an_absent_attention_input():
    """onnxruntime's kernel reports double as not implemented (at run time) and reads QW, MW, V
    and M without checking that they are there (a missing one crashes the process, so that is not
    run here): both are compile-time refusals naming the node."""
    case, model, feeds = _attn_lstm_model("ms_attn_lstm", double=True)
    with pytest.raises(Exception, match="does not support double"):
        oracle.run_onnxruntime(model, feeds)
    with pytest.raises(UnsupportedError, match="AttnLSTM node 'ms_attn_lstm'.*float64"):
        generate(model)
    _, model, _ = _attn_lstm_model("ms_attn_lstm", drop_input=9)
    with pytest.raises(UnsupportedError, match=r"AttnLSTM node 'ms_attn_lstm'.*input 9 \(MW\)"):
        generate(model)


@pytest.mark.parametrize(
    "name, change, message",
    [
        ("ms_varlen_ngram_capture", {"state_update_capacity": 9}, r"9 is outside \[0, 8\]"),
        ("ms_varlen_ngram_capture", {"state_update_capacity": 0}, "capture_count is given"),
        ("ms_varlen_ngram", {"state_update_capacity": 2}, "capture_count is given"),
        ("ms_varlen_ngram_segments_past", {"drop": 7}, "require segment_ids"),
        ("ms_varlen_ngram_segments", {"drop": 7}, "require segment_ids"),
    ],
)
def test_varlen_ngram_hash_refuses_what_onnxruntime_refuses(name, change, message):
    """onnxruntime fails on these nodes whatever the inputs hold (checked here): a capacity
    outside [0, 8], capture_count without a positive capacity or the reverse, past_segment_ids
    or the present_segment_ids output without segment_ids. The compiler refuses them naming the
    node."""
    case = next(c for c in oracle.CASES if c.name == name)
    model, feeds = oracle.build(case)
    node = model.graph.node[0]
    if "drop" in change:
        dropped = node.input[change["drop"]]
        node.input[change["drop"]] = ""
        kept = [value for value in model.graph.input if value.name != dropped]
        del model.graph.input[:]
        model.graph.input.extend(kept)
        feeds.pop(dropped)
    else:
        kept = [a for a in node.attribute if a.name not in change]
        del node.attribute[:]
        node.attribute.extend(kept + [helper.make_attribute(k, v) for k, v in change.items()])
    with pytest.raises(Exception, match="state_update_capacity|requires segment_ids"):
        oracle.run_onnxruntime(model, feeds)
    with pytest.raises(CompileError, match=f"VarlenNGramHashMapping node '{name}'.*{message}"):
        generate(model)


# --- Tokenizer's tokenexp -------------------------------------------------------------------------


def _tokenexp_model(tokenexp, **changes):
    """The oracle's first tokenexp case (built with its own pattern: the build runs
    onnxruntime) with its tokenexp, and other attributes, replaced (None: removed)."""
    case = next(c for c in oracle.CASES if c.name == "ms_tokenizer_tokenexp_longest")
    model, feeds = oracle.build(case)
    node = model.graph.node[0]
    changes = {"tokenexp": tokenexp, **changes}
    kept = [a for a in node.attribute if a.name not in changes]
    del node.attribute[:]
    node.attribute.extend(kept)
    node.attribute.extend(helper.make_attribute(k, v) for k, v in changes.items() if v is not None)
    return model, feeds


@pytest.mark.parametrize(
    "tokenexp, changes, message",
    [
        ("(", {}, "missing \\)"),
        (r"(a)\1", {}, "invalid escape"),
        ("(?=a)a", {}, "invalid perl operator"),
        ("a{1001}", {}, "invalid repetition size"),
        (r"\w+", {"mincharnum": 0}, "mincharnum must be positive"),
        (".", {"mincharnum": 2}, "characters needs mincharnum 1"),
        (None, {}, "needs separators or tokenexp"),
        ("", {}, "needs separators or tokenexp"),
    ],
)
def test_tokenizer_refuses_what_onnxruntime_refuses(tokenexp, changes, message):
    """onnxruntime fails at session creation on these nodes (checked here); the compiler
    refuses them naming the node."""
    model, feeds = _tokenexp_model(tokenexp, **changes)
    with pytest.raises(Exception, match="tokenexp|mincharnum|required"):
        oracle.run_onnxruntime(model, feeds)
    with pytest.raises(CompileError, match=f"Tokenizer node 'ms_tokenizer_tokenexp_longest'.*"
                       f"{message}"):  # fmt: skip
        generate(model)


def test_tokenexp_without_re2_names_the_extra(without_re2):
    """No fallback to Python's re (leftmost-first: "a|ab" would give "a"): the module compiles,
    as the machine that runs it may have RE2, and fails naming the node and the extra."""
    model, feeds = _tokenexp_model("a|ab")
    from onemodel_compile import load_compiled

    module = load_compiled(model)
    with pytest.raises(rt.NodeError) as raised:
        module.run(*feeds.values())
    message = str(raised.value)
    assert "ms_tokenizer_tokenexp_longest" in message and "onemodel-runtime[regex]" in message
    assert "leftmost-longest" in message


def test_tokenexp_match_of_part_of_a_character_fails_as_in_onnxruntime():
    r"""\C matches one byte: a match that cuts a character fails in onnxruntime (at run time)
    and in the module, naming the node."""
    from onemodel_compile import load_compiled

    model, _ = _tokenexp_model(r"\C")
    feeds = {model.graph.input[0].name: np.array(["a\u00e9", "b", "c"], object)}
    with pytest.raises(Exception, match="invalid utf8 chars at byte offset: 1"):
        oracle.run_onnxruntime(model, feeds)
    with pytest.raises(rt.NodeError, match="ms_tokenizer_tokenexp_longest.*byte offset 1"):
        load_compiled(model).run(*feeds.values())


def test_tokenexp_is_a_literal_and_matched_in_linear_time():
    """A pattern written to break out of a string literal reaches the module as one literal
    constant (and matches as onnxruntime matches it); a nested repeat that makes a backtracking
    engine exponential on a run of a's answers at once with RE2."""
    import ast

    from onemodel_compile import load_compiled

    hostile = 'x"""\'\\); import os; os._exit(3) #|(a+)+b|\\w+'
    model, _ = _tokenexp_model(hostile)
    source = generate(model).source
    literals = [n.value for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant)]
    assert hostile in literals
    assert "os._exit" not in source.replace(repr(hostile), "")
    texts = np.array(["a" * 3000 + "c os", 'x"""\'); import os; os._exit(3) #', ""], object)
    feeds = {model.graph.input[0].name: texts}
    got = load_compiled(model).run(texts)[0]
    np.testing.assert_array_equal(got, oracle.run_onnxruntime(model, feeds)[0])
