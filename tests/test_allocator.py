"""runtime_support keeps freed memory for the next run on glibc (runtime_support/_allocator.py):
a run that allocates and frees the same large arrays again and again takes no new pages from the
kernel once runtime_support is imported; the same loop without it does (the control shows the
test can fail). Page faults are counted by the kernel (getrusage), not by the code under test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Four 4 MB arrays made and freed, 20 times: with glibc's default thresholds the 16 MB freed at
# the top of the heap go back to the kernel each time, and come back as fresh pages.
LOOP = """
import json, resource, numpy as np
{setup}
def run():
    arrays = [np.ones(1 << 20, np.float32) for _ in range(4)]
    del arrays
for _ in range(3):
    run()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    run()
print(json.dumps((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20))
"""


def _faults_per_run(setup: str) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-c", LOOP.format(setup=setup)],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_freed_memory_is_reused_without_new_page_faults():
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (ValueError, OSError):
        glibc = False
    if not glibc:
        pytest.skip("the allocator setting is glibc's; elsewhere it does nothing")
    without = _faults_per_run("")
    kept = _faults_per_run("import runtime_support")
    assert without > 1000  # 16 MB of fresh 4 kB pages each run: the control
    assert kept < 10
