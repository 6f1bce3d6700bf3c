"""The `annobench` command. Later stages add their subcommands here."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from annobench import __version__


def _inventory(args: argparse.Namespace) -> int:
    from annobench.config import load_config
    from annobench.inventory import InventoryError, build_inventory

    overrides = {"input": {"images": args.images}} if args.images else None
    config = load_config(args.configfile, overrides)
    try:
        inventory = build_inventory(config)
    except InventoryError as error:
        print(f"annobench: {error}", file=sys.stderr)
        return 2
    sizes = [len(s) for s in inventory.shards]
    print(f"{inventory.n_images} images in {inventory.n_shards} shard(s); "
          f"smallest {min(sizes)}, largest {max(sizes)}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from annobench.demo import write_demo

    write_demo(Path(args.out))
    print(f"demo dataset written to {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="annobench", description=__doc__)
    parser.add_argument("--version", action="version", version=f"annobench {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    inventory = commands.add_parser("inventory", help="list the input images and their shards, without building")
    inventory.add_argument("--configfile", default=None, help="config file (default: config/config.yaml)")
    inventory.add_argument("--images", default=None, help="image folder (overrides input.images)")
    inventory.set_defaults(run=_inventory)

    demo = commands.add_parser("demo", help="(re)write the embedded demo dataset")
    demo.add_argument("--out", default="demo", help="folder to write (default: demo)")
    demo.set_defaults(run=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
