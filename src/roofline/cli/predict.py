"""`roofline predict REPORT.json [--batch N] [--seq N] [--dtype D] [--device NAME|--ceilings FILE] [--json FILE]`:
a measured report's step time predicted as measured or projected to another batch, sequence, dtype or device.
`roofline predict --learn REPORT... [--table FILE]` refreshes the efficiency table from the user's own reports."""

from __future__ import annotations

import argparse

from roofline.cli.common import DTYPE_CHOICES, non_empty, output_file, positive_int
from roofline.errors import RooflineError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "predict", help="predict a report's step time, or project it to another batch, seq, dtype or device",
        description="Predict the step time of a measured report (host and device streams, overlapped), or project "
                    "it: each op scaled by its formula from its recorded shapes, keeping its measured efficiency. "
                    "With --learn, the given reports refresh the efficiency table instead.")
    parser.add_argument("reports", nargs="+", metavar="REPORT", help="report.json (several with --learn)")
    parser.add_argument("--batch", type=positive_int, default=None,
                        help="batch size to project to (default: the report's)")
    parser.add_argument("--seq", type=positive_int, default=None,
                        help="sequence length to project to (default: the report's)")
    parser.add_argument("--dtype", default=None, choices=DTYPE_CHOICES,
                        help="model dtype to project to (default: the report's)")
    parser.add_argument("--from-batch", type=positive_int, default=None,
                        help="the batch size the report was measured with, when it does not record it")
    parser.add_argument("--from-seq", type=positive_int, default=None,
                        help="the sequence length the report was measured with, when it does not record it")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--device", type=non_empty, default=None, metavar="NAME",
                        help="project to this GPU by name (measured cache, else the datasheet), e.g. 'NVIDIA A100'")
    target.add_argument("--ceilings", metavar="FILE", default=None, help="project to the device these ceilings describe")
    parser.add_argument("--json", type=output_file, default=None, metavar="FILE", help="also write the prediction as JSON")
    parser.add_argument("--save", type=output_file, default=None, metavar="FILE",
                        help="also write the report with its prediction (Report.prediction) to FILE")
    parser.add_argument("--table", default=None, metavar="FILE",
                        help="efficiency table to read (or, with --learn, to write; default: the user table in the "
                             "cache directory over the shipped one)")
    parser.add_argument("--host-model", choices=("dispatch", "profiled", "calibrated"), default=None,
                        help="host time per op: calibrated (default): the profiled step's own host timeline less the "
                             "profiler's cost, that cost scaled so that the unchanged step replays at the step time "
                             "the report measured without the profiler (profiled when it has none); profiled: less "
                             "the profiler's cost as this machine's reference loops fitted it (falls back to dispatch, "
                             "saying why, when that fit is not sound or the report lacks the counts); dispatch: this "
                             "machine's dispatch costs")
    parser.add_argument("--host-speed", default=None, metavar="now|FACTOR",
                        help="scale the host's time per op: 'now' probes this host and compares with the speed "
                             "recorded when the report's step was timed (for a host whose speed moves); a number is "
                             "the factor itself (2 = a host twice as slow)")
    parser.add_argument("--learn", action="store_true", help="learn the efficiency table from the given reports")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from roofline.report import Report

    if args.learn:
        return _learn(args)
    if len(args.reports) != 1:
        raise RooflineError("predict takes one report (several only with --learn)")
    report = Report.load(args.reports[0])
    from roofline.analyze.efficiency import load_table
    from roofline.analyze.predict import DEFAULT_HOST_MODEL
    from roofline.analyze.whatif import predict_report
    from roofline.io import atomic_write_text
    from roofline.render.prediction import render_prediction

    prediction = predict_report(report, batch=args.batch, seq=args.seq, dtype=args.dtype,
                                ceilings=_target_ceilings(args), from_batch=args.from_batch, from_seq=args.from_seq,
                                table=load_table(args.table),
                                host_model=args.host_model or DEFAULT_HOST_MODEL,
                                host_speed=_host_speed(args.host_speed, report))
    report.prediction = prediction
    print(render_prediction(prediction), end="")
    if args.json:
        import msgspec

        atomic_write_text(args.json, msgspec.json.format(msgspec.json.encode(prediction), indent=1).decode() + "\n")
        print(f"wrote {args.json}")
    if args.save:
        report.save(args.save)
        print(f"wrote {args.save}")
    return 0


def _host_speed(value: str | None, report) -> float | None:
    if value is None:
        return None
    from roofline.analyze.predict import host_speed_factor

    if value == "now":
        from roofline.device.host import host_probe_us

        return host_speed_factor(report, host_probe_us())
    try:
        factor = float(value)
    except ValueError:
        raise RooflineError(f"--host-speed takes 'now' or a positive number, got {value!r}") from None
    if not (factor > 0 and factor != float("inf")):
        raise RooflineError(f"--host-speed takes 'now' or a positive number, got {value!r}")
    return factor


def _target_ceilings(args: argparse.Namespace):
    if args.ceilings:
        from roofline.device.cache import load_ceilings

        return load_ceilings(args.ceilings)
    if args.device:
        from roofline.device.cache import ceilings_for_device_name

        ceilings = ceilings_for_device_name(args.device)
        if ceilings is None:
            raise RooflineError(f"--device {args.device!r}: no measured ceilings or datasheet entry for it; "
                                "give --ceilings FILE")
        return ceilings
    return None


def _learn(args: argparse.Namespace) -> int:
    from roofline.analyze.efficiency import learn_table, save_table, user_table_path
    from roofline.report import Report

    table = learn_table((path, Report.load(path)) for path in args.reports)
    if not table.sources:
        raise RooflineError("none of the reports has ceilings with roofs: nothing to learn efficiencies from")
    path = save_table(table, args.table or user_table_path())
    print(f"learned {sum(len(v) for v in table.entries.values())} entries from {len(table.sources)} reports; "
          f"wrote {path}")
    return 0
