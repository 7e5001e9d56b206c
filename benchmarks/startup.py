"""How long the CLI takes to start: `--help`, a command that does not evaluate, and `init` again.

    python benchmarks/startup.py [--runs N]

Prints, for each, the median wall time over N fresh processes (default 7): `surreal-eval --help`,
`surreal-eval runs list` on a small persistent store (the demo, two runs) and `surreal-eval init` on
that unchanged store (every script's checksum matches, so nothing is applied).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def timed(args: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "surreal_eval", *args], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as folder:
        url = f"surrealkv://{folder}/store"
        for args in (["init", "--demo"], ["evaluate", "--k", "1,3"], ["evaluate", "--k", "1,3"]):
            timed(["--url", url, *args], 1)
        rows = [("surreal-eval --help", timed(["--help"], runs)),
                ("surreal-eval runs list (demo store, 2 runs)", timed(["--url", url, "runs", "list"], runs)),
                ("surreal-eval init (unchanged store)", timed(["--url", url, "init"], runs))]
    print(f"median of {runs} runs")
    for name, seconds in rows:
        print(f"{name:45} {seconds:6.2f} s")


if __name__ == "__main__":
    main()
