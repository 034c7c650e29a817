"""Secrets out: credentials inside URLs are masked wherever a run could write them, and the API key comes from
$OPENAI_API_KEY or --api-key-file; --api-key still works but warns that `ps` shows it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bootcamp_core.cli.main import main
from bootcamp_core.data.schema import compact_dumps, dumps
from bootcamp_core.data.generate import config_for_bootcamp, generate
from bootcamp_core.evaluate.secrets import MaskedLogs, Redactor, mask_url, mask_urls, url_credentials
from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer, first_user_text
from bootcamp_core.testing.fixtures import free_port

PASSWORD = "pw-in-the-url-5150"
QUERY_TOKEN = "query-token-8086"
KEY = "sk-from-a-file-0123456789"


#: subprocesses and get_registry() see bootcamp-example only, strictly, whatever else is installed
pytestmark = pytest.mark.usefixtures("only_example")


@pytest.fixture
def dataset(example_registry, tmp_path) -> Path:
    config = config_for_bootcamp("example", example_registry, {"split_samples": {"test": 4}}, name="example")
    generate(config, tmp_path / "data", registry=example_registry)
    return tmp_path / "data" / "example_test.jsonl"


def echo_solver(server: ScriptedChatServer):
    """Solves the example's arithmetic and echoes the request's URL and headers into its answer, as a careless
    proxy might; anything else (an endpoint check) gets a plain answer."""

    def script(request: dict) -> Reply:
        headers = server.request_headers[-1]
        echo = f"seen: authorization={headers.get('authorization')}"
        output = next((m["content"] for m in reversed(request.get("messages") or []) if m.get("role") == "tool"),
                      None)
        if output is not None:
            return Reply.text(f'{echo} ```json\n{{"result": {output}}}\n```')
        text = first_user_text(request)
        if "\n\n" not in text:
            return Reply.text("ok")
        return Reply.calls(("calculator", {"expression": text.split("\n\n")[1]}))

    return script


def written(out: Path) -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in out.iterdir() if path.is_file()}


# ---------------------------------------------------------------------------------------------- masking
#: secrets as Redactor keeps them whole: no white space (a value like "Bearer sk-..." is kept in parts too)
SECRET_TEXT = st.text(st.characters(codec="utf-8"), min_size=Redactor.MIN_LENGTH, max_size=10).filter(
    lambda text: not any(character.isspace() for character in text) and text != "EMPTY")
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(secrets=st.lists(SECRET_TEXT, min_size=1, max_size=3), value=JSON_VALUES, data=st.data())
def test_what_the_json_scan_passes_the_walk_would_leave_unchanged(secrets, value, data):
    """The results writer walks a line's data only when the scan of its JSON text finds a secret: quotes,
    backslashes, control and non-ASCII characters, line separators are escaped in the text as in the secret's own
    JSON, so a value holding one is always found."""
    redactor = Redactor(secrets)
    planted = {"before": data.draw(st.text(max_size=5)) + data.draw(st.sampled_from(redactor.secrets))
               + data.draw(st.text(max_size=5)), "value": value}
    for encode in (dumps, compact_dumps):  # results lines are written by either (compact_dumps where it reads back)
        text = encode(planted)
        assert text is None or redactor.may_be_in(text)
        for candidate in (value, {"nested": [value]}):
            text = encode(candidate)
            if text is not None and not redactor.may_be_in(text):
                assert redactor.data(candidate) == candidate


def test_the_json_scan_finds_escaped_secrets_and_url_credentials():
    redactor = Redactor(['tok"en\\1\u2028é', "http://user:pw-123456@host/v1"])
    assert redactor.may_be_in(dumps({"a": ['x tok"en\\1\u2028é y']}))
    assert redactor.may_be_in(dumps("see http://user:pw-123456@host/v1"))
    assert not redactor.may_be_in(dumps({"tok": "en", "user": "pw-12345"}))
    assert not Redactor().may_be_in(dumps({"anything": "sk-123456"}))


@pytest.mark.parametrize(("url", "masked"), [
    ("http://user:PW@host/v1", "http://user:[redacted]@host/v1"),
    ("https://TOKEN123@host:8443/v1", "https://[redacted]@host:8443/v1"),
    ("https://host/v1?api_key=abc&model=x", "https://host/v1?api_key=[redacted]&model=x"),
    ("https://host/v1?x=1&Token=abc#part", "https://host/v1?x=1&Token=[redacted]#part"),
    ("https://host/v1?access-token=abc", "https://host/v1?access-token=[redacted]"),
    ("http://host:8000/v1", "http://host:8000/v1"),
    ("http://user@host/v1?model=key", "http://[redacted]@host/v1?model=key"),
])
def test_a_url_keeps_everything_but_its_credentials(url, masked):
    assert mask_url(url) == masked
    assert mask_urls(f"error: cannot reach {url} (retrying)") == f"error: cannot reach {masked} (retrying)"


def test_masking_urls_in_text_is_linear_and_leaves_other_text_alone():
    text = "a :// b http://x:y@h/ c"
    assert mask_urls(text) == "a :// b http://x:[redacted]@h/ c"
    assert mask_urls("no url here: user:pw@host") == "no url here: user:pw@host"
    # a megabyte of scheme separators, or one endless URL: one pass each (a hang detector would notice otherwise)
    assert mask_urls("://" * 350_000) == "://" * 350_000
    long = "http://u:p@" + "h" * 1_000_000
    assert mask_urls(long) == "http://u:[redacted]@" + "h" * 1_000_000
    assert url_credentials("not a url") == []


def test_a_short_password_is_masked_in_its_url_but_not_everywhere():
    redactor = Redactor([f"http://bob:PW@host/v1?api_key={QUERY_TOKEN}"])
    assert redactor.text("PWD is fine; bob:PW@host failed") == "PWD is fine; bob:[redacted]@host failed"
    # a long enough credential is masked wherever it shows, in its URL or not
    assert redactor.text(f"token {QUERY_TOKEN}") == "token [redacted]"
    assert redactor.data({"url": f"http://h/?api_key={QUERY_TOKEN}"}) == {"url": "http://h/?api_key=[redacted]"}


def test_log_lines_never_show_url_credentials(caplog):
    caplog.set_level(logging.INFO)
    with MaskedLogs(Redactor([])):  # no secret known: URL credentials are still masked
        logging.getLogger("bootcamp_core.somewhere").warning("connecting to http://u:%s@h/v1", PASSWORD)
    assert PASSWORD not in caplog.text and "http://u:[redacted]@h/v1" in caplog.text


# ---------------------------------------------------------------------------------------------- end to end
def test_a_password_in_the_api_url_is_written_nowhere(dataset, tmp_path, capsys, caplog):
    caplog.set_level(logging.INFO, logger="bootcamp_core")
    out = tmp_path / "out"
    server = ScriptedChatServer()
    server.script = echo_solver(server)
    with server:
        url = server.base_url.replace("://", f"://alice:{PASSWORD}@")
        assert main(["eval", "--dataset-path", str(dataset), "--output-dir", str(out), "--api-url", url,
                     "--api-model", "stub", "--verbose"]) == 0
    assert server.requests  # the endpoint was really used, through the URL with the password
    files = written(out)
    assert set(files) == {"results.jsonl", "summary.json", "summary.csv", "report.html"}
    for name, text in files.items():
        assert PASSWORD not in text, name
    lines = [json.loads(line) for line in files["results.jsonl"].splitlines()]
    assert {line["evaluation_config"]["api_url"] for line in lines} == {mask_url(url)}
    assert json.loads(files["summary.json"])["evaluation_config"]["api_url"] == mask_url(url)
    captured = capsys.readouterr()
    assert PASSWORD not in captured.out + captured.err and PASSWORD not in caplog.text


def test_an_unreachable_url_with_a_password_fails_without_showing_it(dataset, tmp_path, capsys):
    out = tmp_path / "out"
    url = f"http://alice:{PASSWORD}@127.0.0.1:{free_port()}/v1?api_key={QUERY_TOKEN}"
    status = main(["eval", "--dataset-path", str(dataset), "--output-dir", str(out), "--api-url", url,
                   "--api-model", "stub", "--retry-budget", "0.5", "--retry-backoff", "0.05", "--quiet"])
    assert status != 0
    captured = capsys.readouterr()
    assert "127.0.0.1" in captured.err  # the one-line error names the endpoint...
    assert PASSWORD not in captured.err + captured.out and QUERY_TOKEN not in captured.err + captured.out
    for name, text in (written(out) if out.exists() else {}).items():  # ...and nothing written shows its secrets
        assert PASSWORD not in text and QUERY_TOKEN not in text, name


def test_the_key_comes_from_a_file_and_never_shows(dataset, tmp_path, capsys):
    key_file = tmp_path / "key.txt"
    key_file.write_text(KEY + "\n", encoding="utf-8")
    out = tmp_path / "out"
    server = ScriptedChatServer()
    server.script = echo_solver(server)
    with server:
        assert main(["eval", "--dataset-path", str(dataset), "--output-dir", str(out), "--api-url",
                     server.base_url, "--api-model", "stub", "--api-key-file", str(key_file), "--quiet"]) == 0
    assert {headers.get("authorization") for headers in server.request_headers} == {f"Bearer {KEY}"}
    for name, text in written(out).items():
        assert KEY not in text, name
    captured = capsys.readouterr()
    assert KEY not in captured.out + captured.err and "--api-key is visible" not in captured.err


def test_api_key_on_the_command_line_works_but_warns(dataset, tmp_path, capsys):
    server = ScriptedChatServer()
    server.script = echo_solver(server)
    with server:
        assert main(["eval", "--dataset-path", str(dataset), "--output-dir", str(tmp_path / "out"), "--api-url",
                     server.base_url, "--api-model", "stub", "--api-key", KEY, "--quiet"]) == 0
    assert {headers.get("authorization") for headers in server.request_headers} == {f"Bearer {KEY}"}
    captured = capsys.readouterr()
    warning = next(line for line in captured.err.splitlines() if "--api-key is visible" in line)
    assert "ps" in warning and "$OPENAI_API_KEY" in warning and "--api-key-file" in warning
    assert KEY not in captured.out + captured.err


@pytest.mark.parametrize(("content", "extra", "message"), [
    ("", (), "is empty"),
    (None, (), "cannot read it"),
    (KEY, ("--api-key", KEY), "not both"),
])
def test_a_bad_key_file_is_one_line(dataset, tmp_path, capsys, content, extra, message):
    key_file = tmp_path / "key.txt"
    if content is not None:
        key_file.write_text(content, encoding="utf-8")
    status = main(["eval", "--dataset-path", str(dataset), "--output-dir", str(tmp_path / "out"), "--api-url",
                   "http://127.0.0.1:9/v1", "--api-model", "stub", "--api-key-file", str(key_file), *extra])
    assert status == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1] and KEY not in "\n".join(err)


# ---------------------------------------------------------------------------------------------- tool server
def test_the_tool_server_never_shows_a_workers_url_credentials():
    from bootcamp_core.serve.common import ApiError
    from bootcamp_core.serve.dashboard import render_dashboard
    from bootcamp_core.serve.master import WorkerEntry

    url = f"http://w:{PASSWORD}@127.0.0.1:1/?token={QUERY_TOKEN}"
    error = ApiError(503, "worker_unreachable", f"cannot reach worker w1 ({url}): refused")
    assert PASSWORD not in error.message and QUERY_TOKEN not in error.body().decode()
    assert "cannot reach worker w1 (http://w:[redacted]@127.0.0.1:1/?token=[redacted])" in error.message
    page = render_dashboard({"ready": True, "expected_workers": 1, "instances": 0, "host": {}, "workers": [
        {"id": "w1", "url": url, "alive": True, "tools": ["example/calculator"], "instances": 0, "load": 0,
         "heartbeat_age_s": 0.1, "host": {}}]})
    assert PASSWORD not in page and QUERY_TOKEN not in page and "[redacted]" in page
    entry = WorkerEntry(id="w1", url=url, tools={}, namespaces=frozenset(), host={}, registered_at=0.0,
                        last_heartbeat=0.0)
    assert entry.public(1.0)["url"] == "http://w:[redacted]@127.0.0.1:1/?token=[redacted]"  # /health's view
    assert entry.url == url  # the master still calls the worker with its credentials


def test_a_tool_configs_token_is_used_but_written_nowhere(dataset, tmp_path, capsys):
    from bootcamp_core.testing.fixtures import serve_tools

    token = "tool-server-token-31337"
    tools = tmp_path / "tools.yaml"
    out = tmp_path / "out"
    with serve_tools("--num-workers", "1", "--bootcamps", "example", log_dir=tmp_path,
                     env={"BOOTCAMP_TOKEN": token, "BOOTCAMP_LOAD_PLUGINS": "example"}) as tool_server:
        tools.write_text("tools:\n  - class_name: example/calculator\n"
                         f"    config: {{type: remote, url: '{tool_server.url}', token: {token}}}\n", encoding="utf-8")
        llm = ScriptedChatServer()
        llm.script = echo_solver(llm)
        with llm:
            assert main(["eval", "--dataset-path", str(dataset), "--output-dir", str(out), "--api-url",
                         llm.base_url, "--api-model", "stub", "--tool-config", str(tools), "--quiet"]) == 0
    lines = [json.loads(line) for line in written(out)["results.jsonl"].splitlines()]
    # the tools ran on the server, with the token (the server refuses calls without it)
    assert lines and all(line["success"] and line["tool_calls"] for line in lines)
    assert all(not call.get("error") for line in lines for call in line["tool_calls"])
    assert {line["evaluation_config"]["component_config"]["example/calculator"]["token"] for line in lines} == {
        "[redacted]"}
    for name, text in written(out).items():
        assert token not in text, name
    captured = capsys.readouterr()
    assert token not in captured.out + captured.err
