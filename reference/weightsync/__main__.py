"""Command line: `python -m weightsync demo` (and `bench`)."""

from __future__ import annotations

import argparse
import logging
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m weightsync")
    sub = parser.add_subparsers(dest="command", required=True)
    from . import demo

    demo.add_arguments(sub.add_parser("demo", help="a trainer pushing updates to worker processes"))
    from . import bench

    bench.add_arguments(sub.add_parser("bench", help="send latency next to its floors and baselines"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.command == "demo":
        return demo.run(args)
    return bench.run(args)


if __name__ == "__main__":
    sys.exit(main())
