"""``bootcamp verl ...``: reached through the ``bootcamp.commands`` entry point; imports no verl.

    bootcamp verl export --dataset-path data/example_train.jsonl --output-dir verl_data
    bash verl_data/run_main_ppo.sh trainer.n_gpus_per_node=8
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bootcamp_core import ConfigError, add_flag, run_guarded

HELP = "train on bootcamps with verl: export datasets, tool and agent-loop configs for main_ppo"
DESCRIPTION = "Train on bootcamps with verl (0.9)."

EXPORT_DESCRIPTION = """\
Write what `python -m verl.trainer.main_ppo` needs to train on bootcamp datasets (written by `bootcamp generate`):
  DIR/<F stem>.parquet     each dataset with agent_name and extra_info.tool_selection, identities as JSON text
  DIR/tool_config.yaml     the tools the datasets use, served by bootcamp_verl.tool.BootcampTool
  DIR/agent_loop_config.yaml  the agent loop with the bootcamps' environment turns
  DIR/run_main_ppo.sh      main_ppo with multi-turn on, both configs, the turn limits of `bootcamp eval` and the
                           pkg://bootcamp_verl.reward reward (extra Hydra overrides go after it)
Mixed-bootcamp datasets work as long as no two of their tools share a name (verl keys tools by name).
Nothing is written unless every record and tool checks out."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``bootcamp verl``: one subcommand, ``export``."""
    sub = parser.add_subparsers(dest="verl_command", metavar="COMMAND")
    parser.set_defaults(print_help=parser.print_help, run=None)
    export = sub.add_parser("export", help="write parquet, tool and agent-loop configs and a main_ppo script",
                            description=EXPORT_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
                            allow_abbrev=False)
    add_flag(export, "--dataset-path", action="append", metavar="PATH", default=[],
             help="a training dataset: .jsonl or .parquet (repeatable)")
    add_flag(export, "--val-dataset-path", action="append", metavar="PATH", default=[],
             help="a validation dataset (repeatable; default: the training datasets)")
    add_flag(export, "--output-dir", metavar="DIR", help="where the files go (required)")
    add_flag(export, "--strict-schemas", action="store_true",
             help="fail on a tool parameter with structure (items, properties ...) instead of offering it as JSON "
             "text")
    add_flag(export, "--max-assistant-turns", type=int, default=None, metavar="N",
             help="per episode, as bootcamp eval (default: the largest the records' generators recommend, else 10)")
    add_flag(export, "--max-user-turns", type=int, default=None, metavar="N",
             help="tool messages and interaction replies per episode, as bootcamp eval (default: the largest the "
             "records' generators recommend, else 20)")
    add_flag(export, "--max-parallel-calls", type=int, default=None, metavar="N",
             help="tool calls of one turn that run; verl drops the rest (default: --max-user-turns)")
    add_flag(export, "--max-tool-response-length", type=int, default=16384, metavar="CHARS",
             help="tool answers are truncated past this (default: 16384; verl's own default is 256)")
    export.add_argument("--format", default="hermes", metavar="NAME", dest="tool_call_format",
                        help="verl's tool-call format, multi_turn.format (default: hermes, for Qwen2.5/Qwen3)")
    add_flag(export, "--system-prompt", metavar="TEXT", help="a system message before every prompt")
    add_flag(export, "--tool-config", metavar="PATH",
             help="tool config YAML: constructor config per tool, as for bootcamp eval")
    add_flag(export, "--interaction-config", metavar="PATH",
             help="interaction config YAML: constructor config per interaction, as for bootcamp eval")
    add_flag(export, "--tool-server", metavar="URL",
             help="run the tools on this bootcamp serve server instead of inside verl's workers")
    add_flag(export, "--ray-tools", action="store_true",
             help="run the tools on tool actors in verl's own Ray job (started by the first tool call, ended with "
             "the job): no tool server to run; needs bootcamp-core[ray]")
    add_flag(export, "--ray-tool-actors", type=int, default=None, metavar="N",
             help="with --ray-tools: tool actors (default: the cluster's CPUs)")
    add_flag(export, "--model-path", default="Qwen/Qwen2.5-3B-Instruct", metavar="MODEL",
             help="default of MODEL_PATH in run_main_ppo.sh (default: Qwen/Qwen2.5-3B-Instruct); a local folder with "
             "its tokenizer measures the prompt lengths exactly, else they are bounded at 1 byte per token")
    add_flag(export, "--train-batch-size", type=int, default=None, metavar="N",
             help="data.train_batch_size (default: what the training records fill, a power of two, at most 64)")
    add_flag(export, "--max-response-length", type=int, default=4096, metavar="TOKENS",
             help="data.max_response_length: every turn of a trajectory, tool output included (default: 4096)")
    add_flag(export, "--rollout-name", default="sglang", choices=("sglang", "vllm"),
             help="default of ROLLOUT_NAME in run_main_ppo.sh (default: sglang)")
    export.set_defaults(run=run_export)


def run(args: argparse.Namespace) -> int:
    """Run the subcommand given; without one, print the help."""
    if args.run is None:
        args.print_help()
        return 0
    return args.run(args)


def run_export(args: argparse.Namespace) -> int:
    from bootcamp_core import resolve_component_config
    from bootcamp_verl.export import ExportOptions, export_datasets

    if not args.dataset_path:
        raise ConfigError("--dataset-path is required: a dataset written by `bootcamp generate` (.jsonl or .parquet)")
    if not args.output_dir:
        raise ConfigError("--output-dir is required")
    for flag, value in (("--max-assistant-turns", args.max_assistant_turns), ("--max-user-turns", args.max_user_turns),
                        ("--max-parallel-calls", args.max_parallel_calls),
                        ("--max-tool-response-length", args.max_tool_response_length),
                        ("--train-batch-size", args.train_batch_size), ("--ray-tool-actors", args.ray_tool_actors),
                        ("--max-response-length", args.max_response_length)):
        if value is not None and value < 1:
            raise ConfigError(f"{flag} must be at least 1, got {value}")
    options = ExportOptions(
        strict_schemas=args.strict_schemas,
        max_assistant_turns=args.max_assistant_turns,
        max_user_turns=args.max_user_turns,
        max_parallel_calls=args.max_parallel_calls,
        max_tool_response_length=args.max_tool_response_length,
        tool_call_format=args.tool_call_format,
        system_prompt=args.system_prompt,
        tool_config=resolve_component_config(args.tool_config, "tool"),
        interaction_config=resolve_component_config(args.interaction_config, "interaction"),
        tool_server=args.tool_server,
        ray_tools=args.ray_tools,
        ray_tool_actors=args.ray_tool_actors,
        model_path=args.model_path,
        rollout_name=args.rollout_name,
        train_batch_size=args.train_batch_size,
        max_response_length=args.max_response_length,
    )
    result = export_datasets(args.dataset_path, args.output_dir, val_dataset_paths=args.val_dataset_path,
                             options=options)
    for note in result.warnings:
        print(f"warning: {note}", file=sys.stderr)
    for path, count in result.records.items():
        print(f"wrote {path} ({count} records)")
    print(f"wrote {result.tool_config} ({len(result.tools)} tool{'s' if len(result.tools) != 1 else ''})")
    print(f"wrote {result.agent_loop_config}")
    sizes = ", ".join(f"{key.rsplit('.', 1)[-1]}={value}" for key, value in result.sizes.items())
    print(f"wrote {result.script} ({sizes}; prompt lengths measured with the "
          f"{'tokenizer' if result.measured_with == 'tokenizer' else 'bound of 1 byte per token'})")
    print(f"next, on the GPU machine: MODEL_PATH=<model> bash {result.script}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``bootcamp verl`` as a program of its own: errors become one line, never a traceback."""
    parser = argparse.ArgumentParser(prog="bootcamp verl", description=DESCRIPTION, allow_abbrev=False)
    add_arguments(parser)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    return run_guarded(lambda: run(args), parser)
