"""``bootcamp generate``: datasets from bootcamps (a thin wrapper over
:func:`bootcamp_core.data.generate.generate_many`)."""

from __future__ import annotations

import argparse

from bootcamp_core.cli.helpers import add_flag, add_ray_flags

HELP = "generate a dataset from bootcamps"
DESCRIPTION = """\
Generate <name>_<split>.jsonl (and .parquet) files into --output-dir: from installed bootcamps' default configs, an
instruction config YAML or a registry JSONL, both in the formats of the original framework, InternBootcamp."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    add_flag(source, "--bootcamp", metavar="NAMESPACE", action="append",
             help="a bootcamp's packaged configs/default.yaml (repeatable)")
    source.add_argument("--all", action="store_true", help="every installed bootcamp, each with its default config")
    add_flag(source, "--instruction-config", metavar="PATH", help="an instruction config YAML")
    add_flag(source, "--bootcamp-registry", metavar="PATH", help="a registry JSONL: one bootcamp or config per line")
    add_flag(parser, "--output-dir", default="data", metavar="DIR", help="where the files go (default: data)")
    add_flag(parser, "--split-samples", metavar="SPEC", help='split sizes, e.g. "train:1000,test:100"')
    parser.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=None,
                        help="shuffle records within each split")
    parser.add_argument("--seed", type=int, help="seed (default: the config's default_seed, else 42)")
    add_flag(parser, "--global-config-overrides", metavar="JSON", field="global_config",
             help="JSON object merged into global_config")
    add_flag(parser, "--tool-config", metavar="PATH", field="tool_config_path",
             help="tool config YAML: which tools records name")
    add_flag(parser, "--interaction-config", metavar="PATH", field="interaction_config_path",
             help="interaction config YAML: which interaction records name")
    add_flag(parser, "--no-tool", action="store_true", help="records name no tools")
    add_flag(parser, "--no-interaction", action="store_true", help="records name no interaction")
    add_flag(parser, "--gen-parquet", action=argparse.BooleanOptionalAction, default=None, help="also write Parquet")
    add_flag(parser, "--max-workers", type=int, default=1, metavar="N", help="processes (default: 1)")
    add_flag(parser, "--concat-files", action="store_true",
             help="also concatenate every bootcamp's files into all_<split>.*")
    add_flag(parser, "--continue-on-error", action="store_true", help="a failing bootcamp does not stop the others")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    add_ray_flags(parser, "generate ranges of records as Ray tasks, written here in order (byte-identical to a "
                          "local run)", ("--ray-tasks", "ranges in flight at once (default: twice the cluster's CPUs)"))


def _overrides(args: argparse.Namespace) -> dict:
    from bootcamp_core.cli.helpers import json_object_flag
    from bootcamp_core.data.config import parse_split_samples

    global_config = json_object_flag(args.global_config_overrides, "--global-config-overrides")
    return {
        "seed": args.seed,
        "split_samples": parse_split_samples(args.split_samples) if args.split_samples is not None else None,
        "shuffle": args.shuffle,
        "gen_parquet": args.gen_parquet,
        "global_config": global_config,
        "tool_config_path": args.tool_config,
        "interaction_config_path": args.interaction_config,
        "no_tool": args.no_tool or None,
        "no_interaction": args.no_interaction or None,
    }


def run(args: argparse.Namespace) -> int:
    import os
    import sys

    from bootcamp_core.cli.helpers import progress_bar
    from bootcamp_core.data import generate as gen
    from bootcamp_core.data.config import load_instruction_config
    from bootcamp_core.plugin.errors import ConfigError
    from bootcamp_core.plugin.loader import get_registry

    if args.max_workers < 1:
        raise ConfigError("--max-workers must be at least 1")
    overrides = _overrides(args)
    registry = get_registry()
    if args.instruction_config:
        configs = [load_instruction_config(args.instruction_config, overrides=overrides)]
    elif args.bootcamp_registry:
        configs = gen.configs_from_registry_file(args.bootcamp_registry, registry, overrides)
    else:
        namespaces = (registry.namespaces() if args.all
                      else [ns for item in args.bootcamp for ns in item.split(",") if ns])
        if not namespaces:
            if os.environ.get("BOOTCAMP_LOAD_PLUGINS", None) is not None:
                raise ConfigError(
                    "no bootcamp loaded: BOOTCAMP_LOAD_PLUGINS is set and allows none of the installed ones")
            raise ConfigError("no bootcamps installed; `bootcamp plugins` shows what was found")
        configs = [gen.config_for_bootcamp(namespace, registry, overrides) for namespace in namespaces]
    total = sum(sum(config.split_samples.values()) for config in configs)
    with progress_bar(total, "generating", disable=args.quiet) as advance:
        if args.ray is not None:
            from bootcamp_core.scale.generate import RayGeneration
            from bootcamp_core.scale.generate import generate_many as generate_on_ray

            used = RayGeneration()
            reports = generate_on_ray(configs, args.output_dir, address=args.ray, in_flight=args.ray_tasks,
                                      continue_on_error=args.continue_on_error, registry=registry, progress=advance,
                                      used=used)
            print(f"ray: {used.tasks} tasks on {len(used.worker_pids)} worker processes", file=sys.stderr)
        else:
            reports = gen.generate_many(
                configs,
                args.output_dir,
                max_workers=args.max_workers,
                continue_on_error=args.continue_on_error,
                registry=registry,
                progress=advance,
            )
    for report in reports:
        if report.error:
            print(f"failed: {report.error}", file=sys.stderr)
            continue
        for path in report.files:
            split = path.stem[len(report.name) + 1:]
            print(f"wrote {path} ({report.counts[split]} records)")
    if args.concat_files:
        for path in gen.concat_outputs(reports, args.output_dir):
            print(f"wrote {path}")
    return 1 if any(report.error for report in reports) else 0
