"""A plugin declares the plugin API it was written for (`bootcamp.api` entry point): `bootcamp plugins` shows it,
and one that needs a newer API than the installed core is reported in one line and never imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from bootcamp_core.plugin.loader import PLUGIN_API
from bootcamp_core.testing import MINIMAL_HOOKS, write_distribution


def plugins(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site), "BOOTCAMP_LOAD_PLUGINS": "fits,newer,silent,garbled"}
    env.pop("BOOTCAMP_STRICT_PLUGINS", None)
    return subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", "plugins", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


def test_declared_api_is_listed_and_a_newer_one_is_one_line_with_the_fix(tmp_path: Path):
    site = tmp_path / "site"
    marker = tmp_path / "imported"
    write_distribution(site, "bootcamp-fits", "1.0", modules={"fits_hooks.py": MINIMAL_HOOKS},
                       entry_points={"bootcamp": {"fits": "fits_hooks"}, "bootcamp.api": {"fits": PLUGIN_API}})
    write_distribution(site, "bootcamp-newer", "2.0",
                       modules={"newer_hooks.py": f"open({str(marker)!r}, 'w').close()\n{MINIMAL_HOOKS}"},
                       entry_points={"bootcamp": {"newer": "newer_hooks"}, "bootcamp.api": {"newer": "0.7"}})
    write_distribution(site, "bootcamp-silent", "3.0", modules={"silent_hooks.py": MINIMAL_HOOKS},
                       entry_points={"bootcamp": {"silent": "silent_hooks"}})
    write_distribution(site, "bootcamp-garbled", "4.0", modules={"garbled_hooks.py": MINIMAL_HOOKS},
                       entry_points={"bootcamp": {"garbled": "garbled_hooks"}, "bootcamp.api": {"garbled": "latest"}})
    installed = metadata.version("bootcamp-core")

    listed = plugins(site)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert f"fits    bootcamp-fits 1.0  (plugin API {PLUGIN_API})" in lines, listed.stdout
    assert "silent  bootcamp-silent 3.0" in lines, listed.stdout
    newer = [line for line in lines if "newer" in line]
    expected = (f'Plugin "newer" (bootcamp-newer 2.0) needs plugin API 0.7, the installed bootcamp-core {installed} '
                f'provides {PLUGIN_API}: pip install --upgrade "bootcamp-core>=0.7"')
    assert newer == [expected], listed.stdout
    garbled = [line for line in lines if "garbled" in line]
    assert len(garbled) == 1 and 'declares plugin API "latest"' in garbled[0] and "MAJOR.MINOR" in garbled[0]

    checked = plugins(site, "--json")  # checked too: each plugin imported in a subprocess, but never "newer"
    assert checked.returncode == 0, checked.stderr
    by_name = {entry["namespace"]: entry for entry in json.loads(checked.stdout)}
    assert by_name["fits"]["api"] == PLUGIN_API and by_name["fits"]["error"] is None
    assert by_name["fits"]["components"], by_name["fits"]
    assert by_name["silent"]["api"] is None and by_name["silent"]["error"] is None
    assert by_name["newer"]["api"] == "0.7" and by_name["newer"]["error"] == newer[0]
    assert plugins(site, "--check").returncode == 1
    assert not marker.exists(), "a plugin that needs a newer core was imported"
