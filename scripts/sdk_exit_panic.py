"""The embedded SurrealDB SDK can abort the interpreter at exit (no surreal-eval code involved).

    python scripts/sdk_exit_panic.py [RUNS]

Runs RUNS (default 100) child interpreters that each open an embedded `AsyncSurreal("mem://")`,
run one query, close it and exit normally, then counts the children that did not exit 0. With
`surrealdb` 3.0.0b10 a few in a hundred end, after their work is done, with
`thread 'tokio-rt-worker' panicked at .../core/src/panicking.rs:225:5: panic in a function that
cannot unwind` and exit 134 (SIGABRT): the engine's runtime is torn down while the interpreter
finalizes. This is why `surreal-eval`'s entry point ends the process with `os._exit` once every
connection is closed (see docs/exit-codes.md).
"""

from __future__ import annotations

import collections
import subprocess
import sys

CHILD = """
import asyncio
from surrealdb import AsyncSurreal

async def main():
    db = AsyncSurreal("mem://")
    await db.connect()
    await db.use("t", "t")
    await db.query("CREATE thing:1 SET x = 1; SELECT * FROM thing")
    await db.close()

asyncio.run(main())
print("done")
"""


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    codes: collections.Counter[int] = collections.Counter()
    panics = 0
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
        codes[done.returncode] += 1
        panics += "panicked" in done.stderr
    print(f"{runs} runs: exit codes {dict(sorted(codes.items()))}, {panics} printed a panic")


if __name__ == "__main__":
    main()
