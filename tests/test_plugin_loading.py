"""With every bootcamp installed, a command imports only the plugins it looks up."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

#: what the other bootcamps bring along: none of it may be imported for a command about bootcamp-example
OTHERS = ("bootcamp_texas_holdem", "bootcamp_battery_design", "bootcamp_bot_trajectory",
          "bootcamp_financial_prediction", "pokerkit", "pybamm", "pybullet", "numpy")


def imported_by(argv: list[str]) -> tuple[int, list[str]]:
    """(exit code, which of OTHERS are in sys.modules) after ``bootcamp ARGV`` runs in a fresh interpreter."""
    code = (
        "import json, sys\n"
        "from bootcamp_core.cli.main import main\n"
        f"code = main({argv!r})\n"
        f"print(json.dumps([code, [name for name in {OTHERS!r} if name in sys.modules]]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    exit_code, loaded = json.loads(done.stdout.splitlines()[-1])
    return exit_code, loaded


def test_every_bootcamp_is_installed_here():
    namespaces = {entry_point.name for entry_point in metadata.entry_points(group="bootcamp")}
    assert {"example", "texas_holdem", "battery_design", "bot_trajectory", "financial_prediction"} <= namespaces


def test_generating_the_example_bootcamp_imports_no_other_bootcamp(tmp_path: Path):
    code, loaded = imported_by(["generate", "--bootcamp", "example", "--split-samples", "train:5,test:2",
                                "--output-dir", str(tmp_path), "-q"])
    assert code == 0
    assert loaded == []
    assert len((tmp_path / "example_train.jsonl").read_text().splitlines()) == 5


def test_listing_bootcamps_imports_none(tmp_path: Path):
    code, loaded = imported_by(["plugins"])
    assert (code, loaded) == (0, [])
