"""ragclinic: a retrieval-augmented generation system that diagnoses and repairs itself."""

import os as _os

# OpenMP spin-waiting slows e5 / torch / llama.cpp 3-10x on a shared 2-core machine (measured);
# set before any native library is loaded. A value the user chose is kept.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"

from ragclinic.config import Settings  # noqa: E402

__all__ = ["Settings", "__version__"]
