"""``bootcamp verl ...``: reached through the ``bootcamp.commands`` entry point; imports no verl.

    bootcamp verl export --dataset-path data/example_train.jsonl --output-dir verl_data
    bash verl_data/run_main_ppo.sh trainer.n_gpus_per_node=8
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bootcamp_core.plugin.errors import BootcampError, ConfigError

EXPORT_DESCRIPTION = """\
Write what `python -m verl.trainer.main_ppo` needs to train on bootcamp datasets (written by `bootcamp generate`):
  DIR/<F stem>.parquet     each dataset with agent_name and extra_info.tool_selection, identities as JSON text
  DIR/tool_config.yaml     the tools the datasets use, served by bootcamp_verl.tool.BootcampTool
  DIR/agent_loop_config.yaml  the agent loop with the bootcamps' environment turns
  DIR/run_main_ppo.sh      main_ppo with multi-turn on, both configs, the turn limits of `bootcamp eval` and the
                           pkg://bootcamp_verl.reward reward (extra Hydra overrides go after it)
Mixed-bootcamp datasets work as long as no two of their tools share a name (verl keys tools by name).
Nothing is written unless every record and tool checks out."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bootcamp verl", description="Train on bootcamps with verl (0.9).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    export = sub.add_parser("export", help="write parquet, tool and agent-loop configs and a main_ppo script",
                            description=EXPORT_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    export.add_argument("--dataset-path", action="append", metavar="PATH", default=[],
                        help="a training dataset: .jsonl or .parquet (repeatable)")
    export.add_argument("--val-dataset-path", action="append", metavar="PATH", default=[],
                        help="a validation dataset (repeatable; default: the training datasets)")
    export.add_argument("--output-dir", metavar="DIR", help="where the files go (required)")
    export.add_argument("--strict-schemas", action="store_true",
                        help="fail on a tool parameter with structure (items, properties ...) instead of offering "
                        "it as JSON text")
    export.add_argument("--max-assistant-turns", type=int, default=10, metavar="N",
                        help="per episode, as `bootcamp eval` (default: 10)")
    export.add_argument("--max-user-turns", type=int, default=20, metavar="N",
                        help="tool messages and interaction replies per episode, as `bootcamp eval` (default: 20)")
    export.add_argument("--max-parallel-calls", type=int, default=None, metavar="N",
                        help="tool calls of one turn that run; verl drops the rest (default: --max-user-turns)")
    export.add_argument("--max-tool-response-length", type=int, default=16384, metavar="CHARS",
                        help="tool answers are truncated past this (default: 16384; verl's own default is 256)")
    export.add_argument("--format", default="hermes", metavar="NAME",
                        help="verl's tool-call format, multi_turn.format (default: hermes, for Qwen2.5/Qwen3)")
    export.add_argument("--system-prompt", metavar="TEXT", help="a system message before every prompt")
    export.add_argument("--tool-config", metavar="PATH",
                        help="tool config YAML: constructor config per tool, as for `bootcamp eval`")
    export.add_argument("--interaction-config", metavar="PATH",
                        help="interaction config YAML: constructor config per interaction, as for `bootcamp eval`")
    export.add_argument("--tool-server", metavar="URL",
                        help="run the tools on this `bootcamp serve` server instead of inside verl's workers")
    export.add_argument("--model-path", default="Qwen/Qwen2.5-3B-Instruct", metavar="MODEL",
                        help="default of MODEL_PATH in run_main_ppo.sh (default: Qwen/Qwen2.5-3B-Instruct)")
    export.add_argument("--rollout-name", default="sglang", choices=("sglang", "vllm"),
                        help="default of ROLLOUT_NAME in run_main_ppo.sh (default: sglang)")
    export.set_defaults(run=run_export)
    return parser


def _component_configs(path: str | None, kind: str) -> dict[str, dict]:
    """{component id: constructor config} of a tool or interaction config file."""
    if not path:
        return {}
    from bootcamp_core.data.config import load_component_config
    from bootcamp_core.plugin.loader import get_registry

    registry = get_registry()
    configs = {}
    for entry in load_component_config(path, kind):
        try:
            component_id = registry.resolve(kind, entry.class_name)
        except BootcampError as error:
            raise ConfigError(f"{path}: {error}") from None
        configs[component_id] = dict(entry.config)
    return configs


def run_export(args: argparse.Namespace) -> int:
    from bootcamp_verl.export import ExportOptions, export_datasets

    if not args.dataset_path:
        raise ConfigError("--dataset-path is required: a dataset written by `bootcamp generate` (.jsonl or .parquet)")
    if not args.output_dir:
        raise ConfigError("--output-dir is required")
    for flag, value in (("--max-assistant-turns", args.max_assistant_turns), ("--max-user-turns", args.max_user_turns),
                        ("--max-parallel-calls", args.max_parallel_calls),
                        ("--max-tool-response-length", args.max_tool_response_length)):
        if value is not None and value < 1:
            raise ConfigError(f"{flag} must be at least 1, got {value}")
    options = ExportOptions(
        strict_schemas=args.strict_schemas,
        max_assistant_turns=args.max_assistant_turns,
        max_user_turns=args.max_user_turns,
        max_parallel_calls=args.max_parallel_calls,
        max_tool_response_length=args.max_tool_response_length,
        tool_call_format=args.format,
        system_prompt=args.system_prompt,
        tool_config=_component_configs(args.tool_config, "tool"),
        interaction_config=_component_configs(args.interaction_config, "interaction"),
        tool_server=args.tool_server,
        model_path=args.model_path,
        rollout_name=args.rollout_name,
    )
    result = export_datasets(args.dataset_path, args.output_dir, val_dataset_paths=args.val_dataset_path,
                             options=options)
    for note in result.warnings:
        print(f"warning: {note}", file=sys.stderr)
    for path, count in result.records.items():
        print(f"wrote {path} ({count} records)")
    print(f"wrote {result.tool_config} ({len(result.tools)} tool{'s' if len(result.tools) != 1 else ''})")
    print(f"wrote {result.agent_loop_config}")
    print(f"wrote {result.script}")
    print(f"next, on the GPU machine: MODEL_PATH=<model> bash {result.script}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``bootcamp verl``: errors become one line, never a traceback."""
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return int(args.run(args) or 0)
    except (BootcampError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: files already complete are kept; unfinished ones were removed", file=sys.stderr)
        return 130
