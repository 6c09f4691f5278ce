"""Model-server overhead, excluding model and kernel time: HTTP, validation, threads, SSE.

    python benchmarks/server_overhead.py [--requests 200]

Starts `tritonize serve` (inductor backend, CPU) on a loopback port and times, per request: GET /health, POST
/v1/models, a 422 (schema error), and a full /v1/convert stream for a task that fails to load (the whole
conversion path - admission, thread hand-off, the loop's task check, event streaming - with no model or kernel
work). Prints p50/p95 in ms.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time

import httpx


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "model_server", "serve"]
    server = subprocess.Popen(
        [*command, "--device", "cpu", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=60) as client:
            _wait(client)
            cases = {
                "GET /health": lambda: client.get("/health"),
                "GET /v1/models": lambda: client.get("/v1/models"),
                "POST /v1/convert, 422": lambda: client.post("/v1/convert", json={"task": "x", "samples": 0}),
                "POST /v1/convert, SSE to error": lambda: _stream(client),
            }
            print(f"{'request':<34} {'p50 ms':>8} {'p95 ms':>8}")
            for name, call in cases.items():
                times = []
                for _ in range(args.requests):
                    started = time.perf_counter()
                    call()
                    times.append((time.perf_counter() - started) * 1000)
                times.sort()
                p95 = times[int(0.95 * (len(times) - 1))]
                print(f"{name:<34} {statistics.median(times):>8.2f} {p95:>8.2f}")
    finally:
        server.terminate()
        server.wait(timeout=30)


def _stream(client: httpx.Client) -> None:
    with client.stream("POST", "/v1/convert", json={"task": "import torch\n"}) as response:
        events = [line for line in response.iter_lines() if line.startswith("data:")]
    assert '"error"' in events[-1], events


def _wait(client: httpx.Client) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if client.get("/health").status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.3)
    raise SystemExit("the server did not start")


if __name__ == "__main__":
    main()
