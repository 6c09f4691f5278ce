"""The GPU lock across real processes: timing waits for every sharer, sharers do not wait for each other."""

import subprocess
import sys
import textwrap
import threading
import time

from verifier.host import gpu_lock

HOLD = textwrap.dedent(
    """
    import sys, time
    from verifier.host import gpu_lock
    with gpu_lock.sharing():
        print("holding", flush=True)
        time.sleep(float(sys.argv[1]))
    """
)


def _sharer(seconds: float) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(seconds)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "holding"
    return process


def test_a_measurement_waits_for_a_sharer_in_another_process_and_sharers_overlap():
    first = _sharer(2.0)
    started = time.monotonic()
    with gpu_lock.sharing():  # a second sharer (this process) gets in at once
        assert time.monotonic() - started < 1.0
    with gpu_lock.measuring():
        waited = time.monotonic() - started
    assert waited > 1.5, "the measurement began while the other process still shared the GPU (for 2 s)"
    first.wait()


def test_a_sharer_waits_for_a_measurement_and_threads_exclude_each_other_like_processes():
    with gpu_lock.measuring():
        sharer = subprocess.Popen([sys.executable, "-c", HOLD, "0"], stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)
        assert sharer.poll() is None  # still waiting to share
    assert sharer.stdout is not None and sharer.stdout.readline().strip() == "holding"
    sharer.wait()
    with gpu_lock.sharing():
        measured = threading.Event()

        def measure() -> None:
            with gpu_lock.measuring():
                measured.set()

        thread = threading.Thread(target=measure)
        thread.start()
        assert not measured.wait(0.5), "a thread of the same process measured while this one shared"
    thread.join(5)
    assert measured.is_set()


def test_a_sharer_that_dies_releases_the_gpu():
    sharer = _sharer(60.0)
    sharer.kill()
    sharer.wait()
    started = time.monotonic()
    with gpu_lock.measuring():
        assert time.monotonic() - started < 2.0
