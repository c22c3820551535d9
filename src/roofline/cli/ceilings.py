"""`roofline ceilings`: measure (or read from the cache) the device's roofs and print them."""

from __future__ import annotations

import argparse
import sys

from roofline.cli.common import add_device_option, output_file, progress_reporter
from roofline.errors import RooflineError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ceilings", help="measure the device's memory bandwidth, FLOP/s per dtype and launch overhead",
        description="Measure this machine's roofs once (about 20 s on a CPU, bounded to 1/8 of free memory) and "
                    "cache them for every later command; print them, with when, under what load and with how many "
                    "threads they were measured. --remeasure measures again on a quiet machine.")
    add_device_option(p)
    p.add_argument("--json", type=output_file, metavar="PATH", help="also write the ceilings as JSON (the Report's `ceilings` fields)")
    p.add_argument("--remeasure", action="store_true", help="measure again instead of using the cache")
    p.add_argument("--quick", action="store_true", help="smaller buffers and fewer repeats (less accurate, cached apart)")
    p.add_argument("--dtypes", metavar="LIST",
                   help="comma-separated dtypes to show (float32,tfloat32,float16,bfloat16,float8_e4m3fn,float64,"
                        "int8); each must exist on the device (default: every dtype measured)")
    p.add_argument("--collectives", action="store_true",
                   help="measure all-reduce / all-gather / reduce-scatter bus bandwidth instead (NCCL over every GPU "
                        "when there are 2 or more; --device cpu: a 2-process gloo group)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.collectives:
        from roofline.distributed.collectives import collectives_command

        return collectives_command(args)
    from roofline.device import get_ceilings, save_ceilings
    from roofline.render.console import render_ceilings

    wanted = _wanted_dtypes(args.dtypes, args.device)
    with progress_reporter("ceilings: reading the cache") as progress:
        ceilings = get_ceilings(
            args.device, remeasure=args.remeasure, quick=args.quick, progress=lambda msg: progress(f"measuring {msg}")
        )
    if wanted:
        ceilings.peak_flops_per_s = {d: v for d, v in ceilings.peak_flops_per_s.items() if d in wanted}
    sys.stdout.write(render_ceilings(ceilings))
    if args.json:
        save_ceilings(ceilings, args.json)
        print(f"wrote {args.json}")
    return 0


def _wanted_dtypes(text: str | None, device: str | None) -> list[str]:
    """The dtypes asked for, checked against what the device has before anything is measured."""
    if text is None:
        return []
    names = [d.strip() for d in text.split(",") if d.strip()]
    if not names:
        # an empty list filtered nothing and showed every dtype, as if --dtypes had not been given
        raise RooflineError(f"--dtypes {text!r} names no dtype: give one or more (e.g. --dtypes float16,bfloat16), "
                            "or leave it out for all")
    from roofline.count.meta import canonical_dtype
    from roofline.device import resolve_device
    from roofline.device.measure import measurable_dtype

    dev = resolve_device(device)
    # the spellings --dtype takes elsewhere (fp16, bf16, fp32) are taken here too
    return [measurable_dtype(dev, canonical_dtype(d) or d) for d in names]
