"""Built-in detectors; importing this package registers them in ``DETECTORS``."""

from ragclinic.doctor.detectors import evidence, generation, graph, query, retrieval, safety, source  # noqa: F401
