"""Report benchmark: the size of report.html and its build time for 100, 1,000 and 10,000 episodes of 40 turns,
and a browser's time to first render (the list shown, ready to filter).

Every number is printed next to a baseline measured in the same run:

- size: report.html over results.jsonl (every episode is embedded, compressed; target: under 100 MB for 10,000);
- build: ``bootcamp report``'s time over one plain parsing pass of the results file (``iter_result_lines``);
- first render: headless Chromium's time from navigation start to the viewer's list (when chromium and
  chromedriver are installed; Selenium gets their paths and never downloads anything).

The episodes are synthetic: a system prompt, a task, then 40 turns of a reply, a tool call and its output, in
words drawn with natural-language (Zipf) frequencies. Run: ``python bench/bench_report.py`` (``--quick``: 100 and
1,000 episodes only). Never part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def write_results(path: Path, count: int) -> None:
    from bootcamp_core.testing import write_synthetic_results

    write_synthetic_results(path, count)


def browser():
    """Headless Chromium through Selenium, or None when either is missing."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        return None
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    os.environ.setdefault("SE_OFFLINE", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(600)
    return driver


def first_render_s(driver, report: Path) -> float:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")
    driver.get(report.resolve().as_uri())
    WebDriverWait(driver, 600).until(lambda d: d.execute_script("return document.body.dataset.viewer") == "ready")
    return int(driver.execute_script("return document.body.dataset.readyAfterMs")) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 episodes only")
    args = parser.parse_args()
    from bootcamp_core.evaluate.report import build_report
    from bootcamp_core.evaluate.results import iter_result_lines

    driver = browser()
    if driver is None:
        print("no chromium/chromedriver (or selenium): first render not measured")
    print(f"{'episodes':>9} {'results MB':>11} {'report MB':>10} {'ratio':>6} {'parse s':>8} {'build s':>8} "
          f"{'ratio':>6} {'render s':>9}")
    directory = Path(tempfile.mkdtemp(prefix="bench-report-"))
    try:
        for count in (100, 1_000) if args.quick else (100, 1_000, 10_000):
            results = directory / f"results-{count}.jsonl"
            write_results(results, count)
            started = time.perf_counter()
            for _ in iter_result_lines(results):
                pass
            parse_s = time.perf_counter() - started
            started = time.perf_counter()
            built = build_report(results, output=directory / f"report-{count}.html")
            build_s = time.perf_counter() - started
            size, report_size = results.stat().st_size / 2**20, built.report_path.stat().st_size / 2**20
            render = f"{first_render_s(driver, built.report_path):9.2f}" if driver is not None else f"{'-':>9}"
            print(f"{count:>9,} {size:11.1f} {report_size:10.1f} {report_size / size:6.2f} {parse_s:8.2f} "
                  f"{build_s:8.2f} {build_s / parse_s:6.2f} {render}", flush=True)
            results.unlink()
    finally:
        if driver is not None:
            driver.quit()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
