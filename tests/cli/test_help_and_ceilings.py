"""Every subcommand explains itself in --help and every option states its default; every roofline command takes
the same --ceilings FILE and measures against it."""

from __future__ import annotations

import argparse

from roofline.cli import build_parser


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_subcommand_has_a_description_and_every_option_its_default():
    for name, sub in _subcommands().items():
        assert sub.description, f"`roofline {name} --help` has no description"
        text = sub.format_help().replace("\n", " ")
        for action in sub._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            formatted = sub._get_formatter()._get_help_string(action) or ""
            assert "default" in formatted.lower() or (action.required and formatted.endswith("(required)")), \
                f"roofline {name} {action.option_strings[-1]}: no default in help"
        assert text


def test_the_commands_that_place_ops_on_a_roofline_all_take_ceilings():
    subs = _subcommands()
    for name in ("analyze", "profile", "trace", "doctor", "lab"):
        options = {o for a in subs[name]._actions for o in a.option_strings}
        assert "--ceilings" in options, name


def test_analyze_measures_against_the_ceilings_file_it_is_given(tmp_path, one_thread):
    import json

    from roofline.cli import main
    from roofline.device import save_ceilings
    from roofline.report import Ceilings

    given = Ceilings(device="cpu", device_name="given cpu", memory_bandwidth_bytes_per_s=12.5e9,
                     peak_flops_per_s={"float32": 321e9}, launch_overhead_s=3e-6, source="measured")
    path = save_ceilings(given, tmp_path / "ceilings.json")
    out = tmp_path / "out"
    assert main(["analyze", "--model", "matmul", "--seq", "64", "--device", "cpu", "--iters", "1", "--warmup", "0",
                 "--no-html", "--ceilings", str(path), "-o", str(out)]) == 0
    ceilings = json.loads((out / "report.json").read_text())["ceilings"]
    assert ceilings["device_name"] == "given cpu" and ceilings["peak_flops_per_s"] == {"float32": 321e9}
