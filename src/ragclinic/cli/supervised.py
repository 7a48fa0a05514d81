"""Whether this process is the command's child under the supervisor (cli/entry.py sets it after the fork): a
server then signals the supervisor to stop, and the child dies with it."""

SUPERVISED = False
