"""The report's trajectory viewer in a real browser: headless Chromium driven by Selenium, offline.

The report of a real ``bootcamp eval`` run (the example bootcamp against a scripted OpenAI-compatible model) is
opened from disk, and what the viewer shows is checked against results.jsonl. Chromium and chromedriver are the
system's (Debian's ``chromium`` and ``chromium-driver``): Selenium is given both paths and never downloads anything.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from bootcamp_core.cli.main import main
from bootcamp_core.data.generate import config_for_bootcamp, generate
from bootcamp_core.evaluate.report import build_report
from bootcamp_core.testing import write_synthetic_results
from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer, first_user_text

CHROMIUM = os.environ.get("BOOTCAMP_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("BOOTCAMP_TEST_CHROMEDRIVER", "/usr/bin/chromedriver")
HOSTILE = '</script><img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'

if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()) and not os.environ.get("CI"):
    pytest.skip(f"the browser tests need {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver); "
                "in CI they always run", allow_module_level=True)

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait


@pytest.fixture(scope="module")
def browser() -> Iterator:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-extensions", "--no-first-run", "--disable-background-networking"):
        options.add_argument(flag)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SE_OFFLINE", "true")  # selenium-manager, should it run at all, stays offline
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(300)
    yield driver
    driver.quit()


def expression_of(request: dict) -> str:
    return first_user_text(request).split("\n\n")[1]


def model(wrong: str, broken: str):
    """A scripted model: the calculator on the whole expression, then its output as the answer; for the record
    ``wrong`` a hostile wrong answer with reasoning, for ``broken`` a malformed tool call first."""

    def script(request: dict) -> Reply:
        messages = request.get("messages") or []
        outputs = [message for message in messages if message.get("role") == "tool"]
        expression = expression_of(request)
        if expression == broken and not outputs:
            return Reply.malformed_arguments("calculator")
        if not outputs or (expression == broken and len(outputs) == 1):
            return Reply.calls(("calculator", {"expression": expression}))
        if expression == wrong:
            return Reply.text(f'{HOSTILE} ```json\n{{"result": 0.5}}\n```', reasoning_content="I will guess 0.5")
        return Reply.text(f'```json\n{{"result": {outputs[-1]["content"]}}}\n```')

    return script


@pytest.fixture(scope="module")
def run(example_registry, tmp_path_factory) -> dict:
    """A real evaluation of 8 records: results.jsonl, its report, and its lines by id."""
    directory = tmp_path_factory.mktemp("browser")
    config = config_for_bootcamp("example", example_registry, {"split_samples": {"test": 8}}, name="example")
    generate(config, directory / "data", registry=example_registry)
    dataset = directory / "data" / "example_test.jsonl"
    records = [json.loads(text) for text in dataset.read_text().splitlines()]
    first = [record["prompt"][0]["content"].split("\n\n")[1] for record in records]
    out = directory / "out"
    with pytest.MonkeyPatch.context() as patch, ScriptedChatServer(model(first[0], first[1])) as server:
        patch.setenv("BOOTCAMP_LOAD_PLUGINS", "example")
        patch.delenv("OPENAI_API_KEY", raising=False)
        code = main(["eval", "--dataset-path", str(dataset), "--output-dir", str(out), "--quiet",
                     "--api-url", server.base_url + "/chat/completions", "--api-model", "stub", "--api-key", "k"])
    assert code == 0
    lines = [json.loads(text) for text in (out / "results.jsonl").read_text().splitlines()]
    return {"report": out / "report.html", "lines": {line["id"]: line for line in lines}, "expressions": first}


def wait_ready(driver) -> None:
    WebDriverWait(driver, 240).until(lambda d: d.execute_script("return document.body.dataset.viewer") == "ready")


def open_report(driver, report: Path, episode: str | None = None) -> None:
    url = report.resolve().as_uri()
    driver.get("about:blank")  # a new document, even when only the fragment differs
    driver.get(url + ("#episode=" + episode.replace("%", "%25").replace("#", "%23") if episode else ""))
    wait_ready(driver)


def shown_count(driver) -> str:
    return driver.find_element(By.ID, "episode-count").text


def listed(driver) -> list[str]:
    return [row.get_attribute("data-episode") for row in driver.find_elements(By.CSS_SELECTOR, "tr.episode-row")]


def js_number(driver, value: float) -> str:
    """A number as the page writes it (JavaScript's ``String(x)``, its shortest exact form)."""
    return driver.execute_script("return String(arguments[0])", value)


def line_of(run: dict, expression: str) -> dict:
    return next(line for line in run["lines"].values() if line["ground_truth"]["expression"] == expression)


def test_an_episode_link_opens_that_episode_with_its_whole_conversation(browser, run):
    line = line_of(run, run["expressions"][0])  # the hostile wrong answer, then feedback turns
    open_report(browser, run["report"], line["id"])
    view = browser.find_element(By.ID, "episode-view")
    text = view.text
    assert line["id"] in text and "not solved" in text
    prompt = line["messages"][0]["content"]
    assert prompt.split("\n\n")[1] in text and "USER · PROMPT" in text.upper()
    call = line["tool_calls"][0]
    assert json.loads(call["arguments"])["expression"] in text and call["output"] in text
    assert "FEEDBACK 1" in text.upper() and "turn score" in text
    # the answer next to the ground truth
    answer = view.find_element(By.CSS_SELECTOR, ".answer pre").text
    assert answer == js_number(browser, line["extracted_output"])
    truth = view.find_element(By.CSS_SELECTOR, ".truth").text
    assert line["ground_truth"]["expression"] in truth
    assert js_number(browser, line["ground_truth"]["expected_result"]) in truth
    # reasoning is there, folded; the hostile markup is text, never elements, and never ran
    assert view.find_elements(By.CSS_SELECTOR, "details.reasoning")
    assert HOSTILE in view.get_attribute("textContent")
    assert not view.find_elements(By.TAG_NAME, "img") and browser.execute_script("return window.pwned") is None
    usage = line["token_usage"]
    assert f"total_tokens\n{usage['total_tokens']}" in text or f"total_tokens {usage['total_tokens']}" in text


def test_a_failed_tool_call_is_marked_with_its_error(browser, run):
    line = line_of(run, run["expressions"][1])
    failed = [call for call in line["tool_calls"] if call.get("error")]
    assert failed, "the scripted malformed call is an error in results.jsonl"
    open_report(browser, run["report"], line["id"])
    errors = browser.find_elements(By.CSS_SELECTOR, "#episode-view .tool-call.failed")
    assert len(errors) == len(failed)
    assert str(failed[0]["error"])[:40] in errors[0].text


def test_clicking_an_episode_in_the_list_opens_it_and_shares_it_in_the_url(browser, run):
    open_report(browser, run["report"])
    rows = listed(browser)
    assert sorted(rows) == sorted(run["lines"])
    # failures first
    assert not run["lines"][rows[0]]["solved"] and run["lines"][rows[-1]]["solved"]
    target = rows[-1]
    browser.find_element(By.CSS_SELECTOR, f'tr.episode-row[data-episode="{target}"] a').click()
    WebDriverWait(browser, 30).until(lambda d: target in d.find_element(By.ID, "episode-view").text)
    assert browser.execute_script("return decodeURIComponent(location.hash)") == f"#episode={target}"


def test_filters_and_search_list_what_results_jsonl_holds(browser, run):
    open_report(browser, run["report"])
    lines = run["lines"]
    Select(browser.find_element(By.ID, "f-solved")).select_by_value("no")
    assert sorted(listed(browser)) == sorted(key for key, line in lines.items() if not line["solved"])
    Select(browser.find_element(By.ID, "f-solved")).select_by_value("")
    browser.find_element(By.ID, "f-min").send_keys("1")
    assert sorted(listed(browser)) == sorted(key for key, line in lines.items() if line["score"] >= 1)
    assert shown_count(browser).startswith(f"{len(listed(browser))} of {len(lines)} episodes")
    browser.find_element(By.ID, "f-min").clear()
    reasons = {line["finish_reason"] for line in lines.values()}
    reason = min(reasons)
    Select(browser.find_element(By.ID, "f-finish")).select_by_value(reason)
    assert sorted(listed(browser)) == sorted(key for key, line in lines.items() if line["finish_reason"] == reason)
    Select(browser.find_element(By.ID, "f-finish")).select_by_value("")
    expression = run["expressions"][3]
    browser.find_element(By.ID, "f-search").send_keys(expression[-25:])
    wanted = [line_of(run, expression)["id"]]
    WebDriverWait(browser, 30).until(lambda d: listed(d) == wanted)


def test_a_failing_score_never_shows_as_a_passing_number(browser, tmp_path):
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"id": "x:0", "generator": "g", "score": 0.99999997, "success": True,
                                   "solved": False, "messages": [{"role": "assistant", "content": "almost"}]}) + "\n")
    open_report(browser, build_report(results).report_path, "x:0")
    assert browser.find_element(By.CSS_SELECTOR, "tr.episode-row").text.startswith("not solved 0.99999997")
    assert "0.99999997 · not solved" in browser.find_element(By.ID, "episode-view").text


# ------------------------------------------------------------------------------------------------ 10,000 episodes
def test_ten_thousand_episodes_of_forty_turns_open_and_filter(browser, tmp_path):
    results = tmp_path / "results.jsonl"
    write_synthetic_results(results, 10_000)  # 40 turns each
    built = build_report(results)
    assert built.episodes == 10_000 and built.report_path.stat().st_size < 100 * 1024 * 1024
    open_report(browser, built.report_path, "rec04242:0")
    assert shown_count(browser).startswith("10000 of 10000 episodes")
    view = browser.find_element(By.ID, "episode-view")
    assert "rec04242:0" in view.text and "Task 4242:" in view.text
    assert view.find_element(By.CSS_SELECTOR, ".hidden-field").text.startswith("answer")
    Select(browser.find_element(By.ID, "f-source")).select_by_value("bootcamp/s1")
    assert shown_count(browser).startswith(f"{len(range(1, 10_000, 3))} of 10000 episodes")
    assert len(listed(browser)) == 200  # one page at a time
    shutil.rmtree(tmp_path, ignore_errors=True)
