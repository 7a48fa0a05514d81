"""Built-in detectors; importing this package registers them in ``DETECTORS``."""

from ragclinic.doctor.detectors import evidence, generation, query, retrieval, safety  # noqa: F401
