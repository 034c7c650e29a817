"""A tokenizer's chat template, rendered into each result's ``full_context`` (the ``tokenizer_path`` setting)."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from bootcamp_core.plugin.errors import ConfigError

__all__ = ["ChatTemplate"]


class ChatTemplate:
    """A tokenizer's chat template rendered as transformers does (sandboxed jinja2), without transformers.

    Reads ``chat_template`` from ``DIR/tokenizer_config.json`` (a string, or a list of ``{name, template}`` where
    ``default`` wins), else ``DIR/chat_template.jinja``. Special tokens of the config (``bos_token``, ...) are passed
    to the template like transformers does.
    """

    def __init__(self, directory: str | os.PathLike) -> None:
        from jinja2.exceptions import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        directory = Path(directory)
        if not directory.is_dir():
            raise ConfigError(f"tokenizer_path {directory}: no such directory", field="tokenizer_path")
        config_path = directory / "tokenizer_config.json"
        config: dict = {}
        if config_path.is_file():
            try:
                config = json.loads(config_path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as error:
                raise ConfigError(f"{config_path}: not valid JSON ({error.msg})") from None
        template = config.get("chat_template")
        if isinstance(template, list):
            named = {item.get("name"): item.get("template") for item in template if isinstance(item, dict)}
            template = named.get("default") or next(iter(named.values()), None)
        if not template and (directory / "chat_template.jinja").is_file():
            template = (directory / "chat_template.jinja").read_text(encoding="utf-8")
        if not isinstance(template, str) or not template:
            raise ConfigError(
                f"tokenizer_path {directory}: no chat_template in tokenizer_config.json (nor chat_template.jinja)",
                field="tokenizer_path",
            )
        self.special_tokens = {}
        for key, value in config.items():
            if key.endswith("_token"):
                value = value.get("content") if isinstance(value, dict) else value
                if isinstance(value, str):
                    self.special_tokens[key] = value

        def raise_exception(message: str) -> None:
            raise TemplateError(message)

        def tojson(value: Any, indent: int | None = None, **_: Any) -> str:
            return json.dumps(value, ensure_ascii=False, indent=indent)

        # the same environment settings as transformers' chat templates, so templates render identically
        environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                    extensions=["jinja2.ext.loopcontrols"])
        environment.filters["tojson"] = tojson
        environment.globals["raise_exception"] = raise_exception
        environment.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        try:
            self.template = environment.from_string(template)
        except TemplateError as error:
            raise ConfigError(f"tokenizer_path {directory}: the chat template does not compile: {error}",
                              field="tokenizer_path") from None

    def render(self, messages: list[dict], tools: list[dict] | None = None) -> str:
        """The trajectory as the model's tokenizer would see it (no generation prompt)."""
        return self.template.render(messages=messages, tools=tools or None, add_generation_prompt=False,
                                    **self.special_tokens)
