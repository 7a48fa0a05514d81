"""ragclinic: a retrieval-augmented generation system that diagnoses and repairs itself."""

import os as _os

from ragclinic.version import __version__

# OpenMP spin-waiting slows e5 / torch / llama.cpp 3-10x on a shared 2-core machine (measured);
# set before any native library is loaded. A value the user chose is kept.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__all__ = ["Clinic", "Consultation", "Question", "Settings", "__version__"]


def __getattr__(name: str):
    # the public API (docs/api.md), imported on first use: `import ragclinic` (which every submodule's import
    # runs first) stays light for the CLI's --help — no pydantic, no pipeline (issue 33)
    if name in ("Clinic", "Consultation", "Question"):
        from ragclinic import clinic  # on use: the pipeline and the models (the CLI's --help stays light)

        return getattr(clinic, name)
    if name == "Settings":
        from ragclinic.config import Settings  # on use: pydantic settings

        return Settings
    raise AttributeError(f"module 'ragclinic' has no attribute {name!r}")
