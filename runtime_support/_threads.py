"""The thread count generated modules compute with: numpy's BLAS and runtime_support's own kernels.

    import runtime_support as rt
    rt.set_num_threads(2)          # from now on, for the whole process
    with rt.threads(1):            # for a block, then the previous count again
        outputs = module.run(x)
    rt.get_num_threads()           # the count in effect

The count is process-wide state, as BLAS's own is: numpy's matrix products everywhere in the
process use it, not only the generated modules'. It applies to

- BLAS: the library numpy loaded, found among the process's loaded shared objects (/proc/self/
  maps, else the files in numpy's own `.libs`/`.dylibs` folder, opened only if already loaded)
  and set through its own call: OpenBLAS in each of its builds (numpy's wheels ship
  scipy-openblas, whose symbols carry a `scipy_` prefix and a `64_` suffix), MKL, BLIS and
  FlexiBLAS. A numpy built on Accelerate, or on a BLAS without a thread call, or with no BLAS,
  has nothing to set: the BLAS part is a silent no-op there (no warning), and the count still
  governs runtime_support's own kernels.
- runtime_support's own kernels that can split work on large arrays across threads (numpy
  releases the GIL in its loops): a pool of count - 1 worker threads, made on first use
  (`run_parts`, `run_ranges`). The fast variant's Gelu and Erf (elementwise), LayerNormalization
  (by rows) and the softmax of fused attention (by rows) split arrays of SPLIT_MIN elements or more
  into runs that give the bits the whole array gets (tests/test_threads.py). SPLIT_MIN is None by
  default, so nothing splits: on the project's shared 2-core machine, loaded by other work, split
  kernels made the models slower at 2 threads (docs/performance.md, session 6).

The default is 1 thread (docs/decisions.md, "Threads"): with numpy's default OpenBLAS threading
(every core) a shared or loaded machine ran the benchmark models 3 to 15 times slower than with
one thread, and the models users run are mostly small. It is applied when runtime_support is
imported, unless the environment already chose a BLAS thread count (OPENBLAS_NUM_THREADS,
OMP_NUM_THREADS, MKL_NUM_THREADS, BLIS_NUM_THREADS): then that count is the default and BLAS is
left as the environment set it. `set_num_threads(0)` returns to the default.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

__all__ = ["get_num_threads", "set_num_threads", "threads"]

# The environment variables through which a user picks BLAS's thread count before numpy loads it.
THREAD_VARIABLES = (
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
)

# (text in the library's file name, setter, getter, C type of the count) for each BLAS whose thread
# count can be set at run time; the first library and symbol pair found wins.
_BLAS_CALLS = (
    ("openblas", "scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_", "int"),
    ("openblas", "scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads", "int"),
    ("openblas", "openblas_set_num_threads64_", "openblas_get_num_threads64_", "int"),
    ("openblas", "openblas_set_num_threads", "openblas_get_num_threads", "int"),
    ("mkl_rt", "MKL_Set_Num_Threads", "MKL_Get_Max_Threads", "int"),
    ("blis", "bli_thread_set_num_threads", "bli_thread_get_num_threads", "int64"),
    ("flexiblas", "flexiblas_set_num_threads", "flexiblas_get_num_threads", "int"),
)
_C_TYPES = {"int": ctypes.c_int, "int64": ctypes.c_int64}


class _Blas:
    """The setter and getter of the loaded BLAS's thread count, or none (`found` False)."""

    def __init__(self) -> None:
        self.name, self._set, self._get = None, None, None
        for path in _loaded_libraries():
            for marker, setter, getter, ctype in _BLAS_CALLS:
                if marker not in path.name.lower():
                    continue
                library = _already_loaded(path)
                set_call = getattr(library, setter, None) if library is not None else None
                get_call = getattr(library, getter, None) if library is not None else None
                if set_call is None or get_call is None:
                    continue
                set_call.argtypes, set_call.restype = [_C_TYPES[ctype]], None
                get_call.argtypes, get_call.restype = [], _C_TYPES[ctype]
                self.name, self._set, self._get = path.name, set_call, get_call
                return

    @property
    def found(self) -> bool:
        return self._set is not None

    def set(self, count: int) -> None:
        if self._set is not None:
            self._set(count)

    def get(self) -> int | None:
        return None if self._get is None else int(self._get())


def _loaded_libraries() -> list[Path]:
    """Shared objects loaded in this process that may be numpy's BLAS: from /proc/self/maps
    (Linux), then the files of numpy's bundled-library folders (wheels on every platform)."""
    import numpy as np

    paths: list[Path] = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and fields[5].startswith("/"):
                    path = Path(fields[5].strip())
                    if path not in paths and ".so" in path.name:
                        paths.append(path)
    except OSError:
        pass
    root = Path(np.__file__).parent
    for folder in (root.parent / "numpy.libs", root / ".libs", root / ".dylibs"):
        if folder.is_dir():
            paths.extend(p for p in sorted(folder.iterdir()) if p not in paths)
    return paths


def _already_loaded(path: Path):
    """The library at `path` if the process has loaded it already (never loads a new one), else
    None. Without RTLD_NOLOAD (Windows), numpy's own folder holds only what numpy loads."""
    mode = getattr(os, "RTLD_NOLOAD", None)
    try:
        if mode is None:
            return ctypes.CDLL(str(path))
        return ctypes.CDLL(str(path), mode=mode | getattr(os, "RTLD_LAZY", 1))
    except OSError:
        return None


_lock = threading.Lock()
_state: dict = {"count": None, "default": None, "pool": None, "pool_size": 0, "blas": None}


def _blas() -> _Blas:
    if _state["blas"] is None:
        _state["blas"] = _Blas()
    return _state["blas"]


def _default_count() -> int:
    """1, or the count the environment chose: as BLAS read it when it loaded (OpenBLAS caps it
    at the CPU count), else as the variable says. Settled once, at the first call."""
    if _state["default"] is None:
        chosen = None
        for variable in THREAD_VARIABLES:
            value = os.environ.get(variable, "").split(",")[0].strip()  # OMP's "4,2": 4
            if value.isdigit() and int(value) > 0:
                chosen = int(value)
                break
        if chosen is not None and _blas().found:
            chosen = _blas().get()
        _state["default"] = chosen or 1
    return _state["default"]


def _environment_chose() -> bool:
    return any(os.environ.get(variable, "").strip() for variable in THREAD_VARIABLES)


def set_num_threads(n: int) -> None:
    """Compute with `n` threads from now on (numpy's BLAS and runtime_support's own kernels), for
    the whole process; 0 returns to the default (1, or the count the environment set: see the
    module docstring). SessionOptions.intra_op_num_threads reaches here."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"set_num_threads: the thread count must be an int >= 0, not {n!r}")
    count = _default_count() if n == 0 else n
    with _lock:
        _state["count"] = count
        _blas().set(count)
        if _state["pool_size"] != count - 1 and _state["pool"] is not None:
            _state["pool"].shutdown(wait=False)
            _state["pool"], _state["pool_size"] = None, 0


def get_num_threads() -> int:
    """The thread count in effect: the last `set_num_threads`, else the default."""
    count = _state["count"]
    return _default_count() if count is None else count


@contextlib.contextmanager
def threads(n: int):
    """`set_num_threads(n)` for the block, then the count before it again (process-wide: two
    Python threads that each enter `threads` with different counts see each other's)."""
    before = get_num_threads()
    set_num_threads(n)
    try:
        yield
    finally:
        set_num_threads(before)


def serially(function, *args):
    """function(*args) with BLAS at one thread, then the count in effect again (at one thread, a
    plain call): for kernels whose products are too small to gain from more. On the project's
    2-core machine a product split over two OpenBLAS threads waits for the second whenever the
    scheduler has not given it a core, a whole time slice (4 to 20 ms where the product takes 10
    to 50 us at one thread); large products gain 1.3 to 1.7x when it has one. Switching costs
    about 0.3 us a call. Process-wide, as the count is: another Python thread's products in the
    meantime run at one thread too (slower, never different)."""
    if get_num_threads() == 1:
        return function(*args)
    with _one_blas_thread():
        return function(*args)


def run_parts(function, parts: int) -> None:
    """function(0), ..., function(parts - 1), spread over the calling thread and the pool's
    count - 1 workers (all in the calling thread at one thread). For kernels whose parts write
    disjoint outputs with numpy calls that release the GIL; an exception in any part is raised.

    Each thread claims the next part not yet claimed, the calling thread too, and the calling
    thread waits only for parts a worker has started: a worker that gets no core in time (a
    loaded machine) costs nothing, its parts run in the calling thread. (Waiting for a worker
    to be scheduled costs up to a scheduler time slice; on this project's loaded 2-core machine
    OpenBLAS's own two-thread products, which do wait, took 10 to 60 times their 1-thread time.)"""
    workers = min(get_num_threads(), parts) - 1
    if workers <= 0:
        for part in range(parts):
            function(part)
        return
    claims = iter(range(parts))  # next() on a range iterator is atomic under the GIL
    started: list = []  # an Event per claim of a worker, registered before it claims
    errors: dict = {}

    def run(part: int) -> None:
        try:
            function(part)
        except BaseException as error:  # raised in the calling thread below
            errors.setdefault(part, error)

    def work() -> None:  # a worker: claims parts until none is left
        while True:
            done = threading.Event()
            started.append(done)  # before the claim: the calling thread then waits for it
            part = next(claims, None)
            if part is not None:
                run(part)
            done.set()
            if part is None:
                return

    pool = _pool(get_num_threads() - 1)
    for _ in range(workers):
        pool.submit(work)
    for part in claims:  # the calling thread's share; then every part is claimed
        run(part)
    for done in list(started):  # a claim registered later finds no part left
        done.wait()
    if errors:
        raise errors[min(errors)]


# The fewest elements a kernel's work must have to be split over the threads (run_ranges), or
# None: every kernel runs in the calling thread alone, the default. Measured on the project's
# 2-core machine under load, splitting lost: the models ran 2.3 to 2.7 times slower at 2 threads
# with their kernels split from SPLIT_SIZE elements on (a worker competes with OpenBLAS's spinning
# threads for the second core, and each numpy call passes the GIL, which numpy holds for a
# call's setup, about 1 us). `python -m tools.bench_pair NAME --threads 2 --compare-split`
# measures both ways; set SPLIT_MIN = SPLIT_SIZE where splitting measures faster.
SPLIT_SIZE = 64000  # below it the hand-off to a worker costs more than the half it takes
SPLIT_MIN: int | None = None


def run_ranges(function, count: int, item_elements: int = 1, align: int = 1) -> None:
    """function(start, stop) over [0, count) items of `item_elements` elements each (rows, or 1
    for elementwise work), in equal runs, twice as many as the threads set, each a multiple of
    `align` items long but the last (run_parts balances them over the threads); one run at one
    thread, with SPLIT_MIN None (the default) or below SPLIT_MIN elements in all."""
    threads = get_num_threads()
    if threads <= 1 or SPLIT_MIN is None or count * item_elements < SPLIT_MIN:
        function(0, count)
        return
    step = -(-count // (2 * threads * align)) * align
    parts = -(-count // step)
    run_parts(lambda part: function(part * step, min(count, (part + 1) * step)), parts)


def _pool(size: int) -> ThreadPoolExecutor:
    with _lock:
        if _state["pool"] is None or _state["pool_size"] != size:
            if _state["pool"] is not None:
                _state["pool"].shutdown(wait=False)
            _state["pool"] = ThreadPoolExecutor(size, thread_name_prefix="runtime_support")
            _state["pool_size"] = size
        return _state["pool"]


def _apply_default() -> None:
    """At import: 1 BLAS thread unless the environment chose a count (then BLAS keeps it)."""
    _default_count()
    if not _environment_chose():
        set_num_threads(0)


# --- one BLAS thread for small work ----------------------------------------------------------------
# A product OpenBLAS splits over two threads waits for the second thread at every call: on a quiet
# machine that costs microseconds and gains at most half of the product, but when the other core is
# taken (a shared machine, another process's spinning threads) the wait is a scheduler slice,
# milliseconds. Below SMALL_BLAS_WORK multiply-adds for a whole kernel call (about 0.1 ms of one
# thread's work at these sizes) the gain is smaller than that risk, so kernels that run
# many small products run them with one BLAS thread (docs/decisions.md: 4 M measured best on a
# quiet machine; 32 M, first chosen under load, held a ResNet-18 at its one-thread time).
SMALL_BLAS_WORK = 4_000_000
_UNCHANGED = contextlib.nullcontext()


def blas_threads_for(multiply_adds: int):
    """A context for a kernel's products of `multiply_adds` in all: numpy's BLAS at one thread
    inside it when the count is above 1 and the work below SMALL_BLAS_WORK, else nothing
    changes (and at one thread it costs nothing)."""
    if get_num_threads() == 1 or multiply_adds >= SMALL_BLAS_WORK or not _blas().found:
        return _UNCHANGED
    return _one_blas_thread()


@contextlib.contextmanager
def _all_blas_threads():
    """BLAS at the count set inside a `_one_blas_thread` block (for one large product), then
    at one thread again."""
    _blas().set(get_num_threads())
    try:
        yield
    finally:
        _blas().set(1)


@contextlib.contextmanager
def _one_blas_thread():
    _blas().set(1)
    try:
        yield
    finally:
        _blas().set(get_num_threads())
