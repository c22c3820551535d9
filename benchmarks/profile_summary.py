"""Summarise a py-spy raw (collapsed-stack) profile: the share of samples in each function, inclusive and self.

    py-spy record -r 200 -f raw -o PROFILE.raw -- python -m roofline trace BIG.json -o OUT
    python benchmarks/profile_summary.py PROFILE.raw [--top 60] > SUMMARY.txt

py-spy samples the running interpreter from outside (no tracing hook), so the shares are not inflated by the
profiler's own per-call cost the way a deterministic profiler's are on a million-call run.
"""

from __future__ import annotations

import argparse
import collections
import sys


def _short(frame: str) -> str:
    """'func (path/to/file.py:12)' -> 'func (file.py)'."""
    name, sep, where = frame.partition(" (")
    if not sep:
        return frame
    return f"{name} ({where.split(':')[0].split('/')[-1].rstrip(')')})"


def summarise(lines, top: int = 60) -> str:
    inclusive: collections.Counter = collections.Counter()
    own: collections.Counter = collections.Counter()
    total = 0
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = [_short(f) for f in stack.split(";")]
        for frame in set(frames):
            inclusive[frame] += n
        own[frames[-1]] += n
    out = [f"samples: {total}", "", "inclusive (share of samples with the function on the stack):"]
    out += [f"  {100 * n / total:5.1f}%  {f}" for f, n in inclusive.most_common(top)]
    out += ["", "self (share of samples in the function itself):"]
    out += [f"  {100 * n / total:5.1f}%  {f}" for f, n in own.most_common(top // 2)]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", help="py-spy record -f raw output")
    parser.add_argument("--top", type=int, default=60)
    args = parser.parse_args(argv)
    with open(args.profile) as fh:
        sys.stdout.write(summarise(fh, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
