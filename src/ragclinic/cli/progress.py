"""The progress bar of long CLI work that is counted in items (eval, diagnose --from-eval)."""

from __future__ import annotations

from ragclinic.cli.base import err


class progress_bar:  # noqa: N801 - used as a context manager, like open()
    """A progress bar with ETA on stderr (silent with --json); yields tick(done, total)."""

    def __init__(self, quiet: bool, label: str = "evaluating") -> None:
        self.quiet, self.label = quiet, label

    def __enter__(self):
        if self.quiet:
            return lambda done, total: None
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn  # on use: rich's progress bars

        self.bar = Progress(TextColumn(self.label), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                            TimeRemainingColumn(), console=err, transient=True)
        self.bar.__enter__()
        self.task = self.bar.add_task("eval", total=None)
        return lambda done, total: self.bar.update(self.task, completed=done, total=total)

    def __exit__(self, *exc):
        if not self.quiet:
            self.bar.__exit__(*exc)
        return False
