"""The failed-answer library (issue 56): answers users rated unhelpful (and, with ``cases_from_doctor``, answers the
doctor could not repair) kept as cases, localised in bulk by the debugger, exported as an evaluation set.
docs/cases.md says how to use it."""
