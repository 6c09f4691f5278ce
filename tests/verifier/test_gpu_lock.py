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
    """Shown by order, not by the clock: this process shares while the other still holds the GPU, and a
    measurement begins only once the other process is gone."""
    first = _sharer(60.0)
    with gpu_lock.sharing():  # a second sharer (this process) gets in
        assert first.poll() is None, "the other sharer let go first: the two did not overlap"
    measured = _measure_in_a_thread()
    assert not measured.wait(0.5), "the measurement began while the other process still shared the GPU"
    first.kill()
    first.wait()
    assert measured.wait(60), "the measurement never began after the sharer ended"


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
    assert _measure_in_a_thread().wait(60), "a killed sharer still held the GPU"


def _measure_in_a_thread() -> threading.Event:
    """Set once a thread of this process has taken the GPU for measuring (and let it go)."""
    measured = threading.Event()

    def measure() -> None:
        with gpu_lock.measuring():
            measured.set()

    threading.Thread(target=measure, daemon=True).start()
    return measured
