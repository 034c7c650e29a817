"""The suite that keeps the openai 1.40–2.x line working (hatch env ``openai2``, beside core's own suite, which runs on
the newest openai): this check, then the SDK path's tests of ``core/tests`` (the lean client and the SDK's,
side by side), under the SDK built on ``httpx`` rather than openai 3's ``httpx2``."""

from __future__ import annotations

import httpx
import openai

from bootcamp_core.episode.policies import OpenAIPolicy, sdk_http


def test_the_installed_sdk_is_the_line_before_httpx2_and_the_policy_builds_its_clients_on_httpx():
    assert int(openai.__version__.split(".", 1)[0]) < 3, openai.__version__
    assert sdk_http() is httpx
    policy = OpenAIPolicy(api_url="http://127.0.0.1:9/v1", model="m", client="sdk")
    assert isinstance(policy._clients[0]._client, httpx.AsyncClient)
