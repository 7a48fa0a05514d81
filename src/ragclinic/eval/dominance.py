"""Dominance over the simple peer (issue 52): per question, where the peer (``naive``: the same passages, or the
top 5 of the same retrieval, in one prompt of the same model, no checks) got the right outcome and a ragclinic
arm did not — a *loss* — and the reverse — a *win*.

A question the peer answers and ragclinic does not is a defect with a cause. Each loss is kept with what the
run recorded at the time (``run_state``: the route and path the gate took and why, its evidence scores, the
answer field the model wrote, the passages it cited, a refusal's reason) and, when ``eval rag`` kept the
case's knowledge base, the layer the debugger blames (eval/diagnose.py ``blame_losses``), so the table of
losses says which layer to fix, not a guess.

``kind`` sorts a loss by what the user saw: ``refused`` (the peer answered right, ragclinic refused),
``tools`` (an answer computed by the tools path, not read from a passage), ``wrong`` (answered, not the
expected answer) and ``answered unanswerable`` (the peer refused rightly, ragclinic answered).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ragclinic.pipeline.generate import parse_reply

PEER = "naive"
SHOWN = 3  # passages' gate scores kept per case (the highest)
CUT = 240  # characters kept of a passage, the model's reply


def arm_ok(row: dict[str, Any], arm: dict[str, Any]) -> bool:
    """Whether an arm's answer was the right outcome: a refusal where one is expected, else a correct answer."""
    return arm["refused"] if row["expect_refusal"] else arm["correct"]


def run_state(trace, answer=None) -> dict[str, Any]:
    """What a pipeline run held at each decision, from its trace: the gate's route, question type, path (direct
    or tools) and reason, the passages' evidence scores (highest first), the generator's raw reply and its parsed
    fields, the passages the answer cited, whether tools computed it. ``answer``: the answer the arm returned (the
    trace's recorded one when not given)."""
    answer = answer if answer is not None else trace.answer
    out: dict[str, Any] = {}
    gate = trace.span("gate")
    if gate is not None and getattr(gate.output, "decision", None) is not None:
        d = gate.output.decision
        out.update(route=d.route, question_type=d.question_type, path=d.path, path_why=d.path_why,
                   evidence_score=round(d.evidence_score, 3), gate_reason=d.reason)
        scores = sorted(((p.support, p.n) for p in gate.output.passages), reverse=True)[:SHOWN]
        out["supports"] = [{"n": n, "support": round(s, 3)} for s, n in scores]
    gen = trace.span("generate")
    if gen is not None and gen.output is not None:
        out["tools"] = bool(getattr(gen.output, "tools", None))
    reply = [c for c in trace.model_calls if c.layer == "generate" and c.kind == "chat"]
    if reply:
        raw = str(reply[-1].output)
        out["model_reply"] = raw[:CUT]
        out.update(_reply_fields(raw))
    out["cited"] = [{"n": c.n, "chunk_id": c.chunk_id, "text": c.text[:CUT]} for c in answer.citations]
    out["flags"] = list(answer.flags)
    return out


def _reply_fields(raw: str) -> dict[str, Any]:
    """The structured reply's status and items as the generator read them (generate/structured.py), when the
    model followed the schema: ``reply_answer`` and ``reply_evidence`` for one item, ``reply_points`` for more."""
    reply = parse_reply(raw, "short")
    if reply.form != "json":
        return {}
    out: dict[str, Any] = {"reply_status": reply.status}
    if len(reply.items) == 1:
        out.update(reply_answer=reply.items[0].text, reply_evidence=list(reply.items[0].evidence))
    elif reply.items:
        out["reply_points"] = [i.text for i in reply.items][:5]
    return out


def loss_kind(row: dict[str, Any], arm: dict[str, Any]) -> str:
    if row["expect_refusal"]:
        return "answered unanswerable"
    if arm["refused"]:
        return "refused"
    if (arm.get("state") or {}).get("tools"):
        return "tools"
    return "wrong"


def dominance(rows: list[dict[str, Any]], arms: list[str] | tuple[str, ...], peer: str = PEER) -> dict[str, Any]:
    """Per arm other than ``peer``: the cases both answered, the peer's and the arm's right outcomes, the losses
    (the peer right, the arm not) and wins (the reverse), the loss rate, losses by kind, and each loss and win
    with both answers and the arm's recorded state."""
    out: dict[str, Any] = {}
    for name in arms:
        if name == peer:
            continue
        pairs = [r for r in rows if r.get(peer) and r.get(name)]
        losses = [r for r in pairs if arm_ok(r, r[peer]) and not arm_ok(r, r[name])]
        wins = [r for r in pairs if arm_ok(r, r[name]) and not arm_ok(r, r[peer])]
        out[name] = {"of": len(pairs), "peer_ok": sum(arm_ok(r, r[peer]) for r in pairs),
                     "arm_ok": sum(arm_ok(r, r[name]) for r in pairs), "losses": len(losses), "wins": len(wins),
                     "loss_rate": round(len(losses) / len(pairs), 4) if pairs else None,
                     "dominates": len(losses) <= len(wins),
                     "losses_by_kind": dict(Counter(loss_kind(r, r[name]) for r in losses)),
                     "loss_cases": [_case(r, name, peer) for r in losses],
                     "win_cases": [_case(r, name, peer) for r in wins]}
    return out


def _case(row: dict[str, Any], arm: str, peer: str) -> dict[str, Any]:
    a = row[arm]
    return {"key": row["key"], "setting": row.get("setting", ""), "question": row["question"],
            "expected": row["expected"], "expect_refusal": row["expect_refusal"], "kind": loss_kind(row, a),
            "peer_answer": row[peer]["answer"][:CUT], "answer": a["answer"][:CUT], "refused": a["refused"],
            "trace_id": a.get("trace_id", ""), "kb": row.get("kb", ""),
            "state": a.get("state", {})}


def keep_blame(new: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    """``new`` with the blame of every loss case ``old`` (an earlier report of the same run) had already found
    for the same case, arm and trace: a resumed run does not diagnose a loss twice."""
    if not old:
        return new
    for arm, d in new.items():
        known = {(c["key"], c["trace_id"]): c["blame"] for c in (old.get(arm) or {}).get("loss_cases", [])
                 if c.get("blame")}
        for c in d["loss_cases"]:
            if (c["key"], c["trace_id"]) in known:
                c["blame"] = known[(c["key"], c["trace_id"])]
    return new


def blamed_layers(d: dict[str, Any]) -> dict[str, int]:
    """Losses per layer the debugger blamed (``not diagnosed`` where it was not run)."""
    return dict(Counter((c.get("blame") or {}).get("layer", "not diagnosed") for c in d["loss_cases"]))
