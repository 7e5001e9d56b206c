"""An environment whose surrealdb SDK is not 3.x (langchain-surrealdb 0.2 pins 1.x) is refused in one line, exit 3."""

from __future__ import annotations

import os
import subprocess
import sys

from surreal_eval.store.sdk_version import PINNED, sdk_problem


def test_a_3x_sdk_passes_and_any_other_is_refused_naming_the_version_and_the_way_on():
    assert sdk_problem(PINNED) is None and sdk_problem("3.1.0") is None
    said = sdk_problem("1.0.4")
    assert said is not None and "\n" not in said
    assert said.startswith("surreal-eval needs the surrealdb SDK 3 (3.0.0b10, SurrealDB 3), but the surrealdb SDK installed is 1.0.4")
    assert said.endswith("install surreal-eval in an environment of its own (docs/own-database.md#langchain-surrealdb)")
    assert "no surrealdb SDK is installed" in sdk_problem(None)


def test_the_cli_on_an_environment_whose_sdk_metadata_says_1x_exits_3_in_one_line(tmp_path):
    """The metadata of a 1.x SDK first on the path (as pip leaves it after installing langchain-surrealdb 0.2.1)."""
    info = tmp_path / "surrealdb-1.0.4.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: surrealdb\nVersion: 1.0.4\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "surreal_eval", "--url", "mem://", "runs", "list"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3
    assert done.stderr.splitlines() == [f"error: {sdk_problem('1.0.4')}"]
