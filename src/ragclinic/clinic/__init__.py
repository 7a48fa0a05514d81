"""The Clinic (clinic.py): the public Python API over one knowledge base, its parts from ragclinic/wiring.py;
``Question`` / ``Consultation`` (question.py): what it is asked and what it answers; health.py: `ragclinic check`."""

from ragclinic.clinic.clinic import LOAD, Clinic
from ragclinic.clinic.question import Consultation, Question

__all__ = ["LOAD", "Clinic", "Consultation", "Question"]
