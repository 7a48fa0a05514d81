"""The `ragclinic` executable: a small supervisor that reports a native crash instead of dying silently.

The command runs in a forked child; the parent imports nothing heavy (so forking is safe: no threads yet),
waits, and passes the exit code through. If the child is killed by a crash signal (SIGSEGV, SIGBUS, SIGILL,
SIGFPE, SIGABRT; SIGKILL, which the out-of-memory killer sends), the parent prints which layer and native
library it was in (``ragclinic.native``) and exits with 3. Signals a user sends (Ctrl-C, SIGTERM, SIGHUP) are passed to the child and end both as usual.
The two die together: the child asks the kernel for SIGKILL when its parent dies (Linux ``PR_SET_PDEATHSIG``;
elsewhere a thread that watches the parent), so ``kill -9`` of the command's PID also ends the work, frees a
server's port and releases the knowledge base's writer lock — a re-run then resumes at once (issue 32).
``RAGCLINIC_NO_SUPERVISOR=1`` runs the command in one process.
"""

from __future__ import annotations

import os
import signal
import sys

from ragclinic import native
from ragclinic.children import die_with_parent
from ragclinic.cli import supervised

EXIT_CRASHED = 3
CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT,
                 signal.SIGKILL}  # SIGKILL of the child alone: most often the kernel's out-of-memory killer


def main() -> None:
    if os.environ.get("RAGCLINIC_NO_SUPERVISOR") or not hasattr(os, "fork"):
        _run()
        return
    page = native.install()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # no window where Ctrl-C ends the parent alone
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        supervised.SUPERVISED = True  # in the child that runs the command under the supervisor
        signal.signal(signal.SIGINT, previous)
        die_with_parent(parent)
        _run()
        return
    sys.exit(_supervise(pid, page))


def _run() -> None:
    from ragclinic.cli.main import main as cli_main  # on use: the CLI (typer, rich), in the child after the fork

    cli_main()


def _supervise(pid: int, page) -> int:
    def forward(signum, _frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    # SIGINT stays ignored here: the terminal sends Ctrl-C to the child too, which handles it.
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, forward)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    sig = os.WTERMSIG(status)
    if sig not in CRASH_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)  # end the same way the child did (the shell sees the signal)
        return 128 + sig
    sys.stderr.write(crash_report(sig, page) + "\n")
    return EXIT_CRASHED


def crash_report(sig: int, page) -> str:
    name = signal.Signals(sig).name + (": out of memory, or killed by another process" if sig == signal.SIGKILL
                                       else "")
    where = native.read(page)
    if not where:
        place = "outside the native calls ragclinic marks"
    else:
        place = " or ".join(f"in the {layer} layer" + (f", inside {library} ({op})" if library else "")
                            for layer, library, op in where)
    return (f"error: ragclinic crashed ({name}) {place}. Nothing already stored is lost: every write to the "
            f"knowledge base is one SQLite transaction and the indexes catch up when it is next opened; "
            f"running the same command again resumes. If it crashes again on the same input, run "
            f"`ragclinic check` and report the input, this message and the check's output.")
