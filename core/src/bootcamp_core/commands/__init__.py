"""Built-in ``bootcamp`` subcommands, one module each: ``add_parser(subparsers)`` adds the parser and sets
``run=<function(args) -> int>`` as its default. Modules import only argparse at load time, so ``bootcamp --help``
stays fast; the work happens inside ``run``."""
