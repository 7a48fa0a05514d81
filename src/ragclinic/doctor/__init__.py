"""The doctor: symptoms (detectors/), treatments (treatments/), router, budget, verification."""

from ragclinic.doctor.doctor import Doctor, DoctorResult  # noqa: F401
