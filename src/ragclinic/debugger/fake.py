"""A scripted probe for tests: the report it is given, whatever the case."""

from __future__ import annotations

from ragclinic.debugger.base import Case, LayerReport


class ScriptedProbe:
    def __init__(self, report: LayerReport) -> None:
        self.report = report
        self.seen: list[Case] = []

    def __call__(self, case: Case) -> LayerReport:
        self.seen.append(case)
        return self.report
