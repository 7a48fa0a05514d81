"""The report's plot: each arm's helpful ratio with its interval, and the always-valid p-value of each comparison as
rated answers came in, against α (where the stop rule would declare a winner)."""

from __future__ import annotations

import io
from typing import Any


def plot_png(rep: dict[str, Any]) -> bytes:
    """The report (``report.report``'s object) as a PNG."""
    import matplotlib  # on use: matplotlib (heavy), only when a plot is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # on use: as above

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    arms = rep["arms"]
    for i, a in enumerate(arms):
        if a["helpful_ratio"] is None:
            continue
        lo, hi = a["helpful_ci"]
        left.errorbar([i], [a["helpful_ratio"]], yerr=[[a["helpful_ratio"] - lo], [hi - a["helpful_ratio"]]],
                      fmt="o", capsize=6)
        left.annotate(f"{a['helpful_ratio']:.2f} (n={a['rated']})", (i, a["helpful_ratio"]),
                      textcoords="offset points", xytext=(8, 0), fontsize=8)
    left.set_xticks(range(len(arms)), [a["arm"] for a in arms])
    left.set_xlim(-0.5, len(arms) - 0.3)
    left.set_ylim(0, 1.05)
    left.set_ylabel("helpful ratio of rated answers")
    left.set_title("per arm, with its interval", fontsize=10)
    drawn = 0
    for c in rep["comparisons"]:
        trail = c["p_always_valid_trail"]
        if trail:
            right.plot(range(1, len(trail) + 1), trail, label=f"{c['arm']} vs {c['baseline']}")
            drawn += 1
        right.axhline(c["alpha"], color="grey", linestyle="--", linewidth=1)
    right.set_yscale("log")
    right.set_ylim(1e-4, 1.5)
    right.set_xlabel("rated answers, in time order")
    right.set_ylabel("always-valid p")
    right.set_title("the stop rule: a winner below the dashed α", fontsize=10)
    if drawn:  # no rated answer yet: nothing to name
        right.legend(fontsize=8)
    fig.suptitle(f"experiment {rep['name']} ({rep['status']}, {rep['requests']} requests)", fontsize=11)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()
