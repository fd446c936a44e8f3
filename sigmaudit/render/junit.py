"""JUnit XML of a check view (``sigmaudit check --junit FILE``): one test case per threshold.

The JUnit XML dialect that GitLab, Jenkins, Azure Pipelines and most CI systems read:
``<testsuites>`` holding one ``<testsuite>``, whose ``<testcase>`` elements carry a
``<failure message=... type=...>`` when the threshold fails. Counts (``tests``, ``failures``,
``errors``, ``skipped``) are given on both levels. Built from the view's JSON contract only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..fmt import pct, settings_line

if TYPE_CHECKING:
    from ..views import View


def render_junit(view: View) -> str:
    """The check view's data as a JUnit XML document (UTF-8, with declaration)."""
    import xml.etree.ElementTree as ET

    d = view.data
    checks = d["checks"]
    n, n_fail = len(checks), sum(not c["passed"] for c in checks)
    counts = {"tests": str(n), "failures": str(n_fail), "errors": "0", "skipped": "0"}
    root = ET.Element("testsuites", {"name": "sigmaudit", **counts, "time": "0"})
    suite = ET.SubElement(root, "testsuite", {"name": f"sigmaudit check at G = {d['G']}", **counts, "time": "0"})
    props = ET.SubElement(suite, "properties")
    for key in ("G", "prompts", "estimator_rule", "level", "replicates", "confidence"):
        value = d.get(key)
        ET.SubElement(props, "property", {"name": "estimator" if key == "estimator_rule" else key,
                                          "value": "" if value is None else str(value)})
    if d.get("config"):  # a config file set values of this gate: named, as the run's note names them
        values = [(v["table"], v["key"], v["value"]) for v in d["config"]["values"]]
        ET.SubElement(props, "property", {"name": "config", "value": settings_line(d["config"]["file"], values)})
    for c in checks:
        case = ET.SubElement(suite, "testcase", {"classname": "sigmaudit.check", "name": c["name"], "time": "0"})
        text = f"{c['sentence']} at G = {d['G']} ({c['meaning']}; estimator {c['estimator']})"
        if c.get("value_ci") is not None:
            lo, hi = c["value_ci"]
            text += f"; {pct(d['level'], 0)} interval [{lo:.4g}, {hi:.4g}]"
        if c["passed"]:
            ET.SubElement(case, "system-out").text = text
        else:
            ET.SubElement(case, "failure", {"message": c["sentence"], "type": "ThresholdFailed"}).text = text
    for w in d.get("warnings", []):
        ET.SubElement(suite, "system-err").text = f"warning: {w}"
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
