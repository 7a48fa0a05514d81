"""Built-in treatments; importing this package registers them in ``TREATMENTS``."""

from ragclinic.doctor.treatments import answer, context, graph, query, retrieval  # noqa: F401
from ragclinic.doctor.treatments.base import TREATMENTS, Change, Treatment  # noqa: F401
