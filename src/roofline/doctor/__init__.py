"""The bottleneck doctor: rules over a Report's evidence that name a problem, where it is, what it costs, and the fix.

    from roofline.doctor import diagnose, RULES
    findings = diagnose(report)          # ranked by estimated_savings_s, largest first

Each rule lives in its own module under ``roofline.doctor.rules`` and registers itself by name.
"""

from roofline.doctor.registry import RULES, Rule, diagnose, rank, register
from roofline.doctor import rules as _rules  # noqa: F401,E402 - registers every rule

__all__ = ["RULES", "Rule", "diagnose", "rank", "register"]
