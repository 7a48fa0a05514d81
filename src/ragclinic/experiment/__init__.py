"""Online experiments between configurations (issue 56): a design (arms, shares, the stop rule's α), the stable
assignment of a session or key to an arm, the record of each answered request, and the report with its statistics.
docs/experiments.md says how to run one and how to read the report."""
