"""`roofline ceilings`: measure (or read from the cache) the device's roofs and print them."""

from __future__ import annotations

import argparse
import sys

from roofline.cli.common import add_device_option


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("ceilings", help="measure the device's memory bandwidth, FLOP/s per dtype and launch overhead")
    add_device_option(p)
    p.add_argument("--json", metavar="PATH", help="also write the ceilings as JSON (the Report's `ceilings` fields)")
    p.add_argument("--remeasure", action="store_true", help="measure again instead of using the cache")
    p.add_argument("--quick", action="store_true", help="smaller buffers and fewer repeats (less accurate, cached apart)")
    p.add_argument("--collectives", action="store_true",
                   help="measure all-reduce / all-gather / reduce-scatter bus bandwidth instead (NCCL over every GPU "
                        "when there are 2 or more; --device cpu: a 2-process gloo group)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.collectives:
        from roofline.distributed.collectives import collectives_command

        return collectives_command(args)
    from rich.console import Console

    from roofline.device import get_ceilings, save_ceilings
    from roofline.render.console import render_ceilings

    err = Console(stderr=True)
    with err.status("measuring ceilings...") as status:
        ceilings = get_ceilings(
            args.device, remeasure=args.remeasure, quick=args.quick, progress=lambda msg: status.update(f"measuring {msg}")
        )
    sys.stdout.write(render_ceilings(ceilings))
    if args.json:
        save_ceilings(ceilings, args.json)
        print(f"wrote {args.json}")
    return 0
