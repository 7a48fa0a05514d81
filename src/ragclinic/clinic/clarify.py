"""One clarifying question per query: the doctor asked one back (route "clarify"); the owner's remembered reply
to the same ambiguity (store/clarifications.py), else the caller's ``reply``, is merged into the question and the
doctor answers that — in the same debug round."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from dataclasses import replace

from ragclinic.clinic.question import Clarification, Question
from ragclinic.pipeline.request import Hooks
from ragclinic.store.clarifications import ClarificationMemory, ambiguity_key

Warn = Callable[[str], None]


class Clarifications:
    """The knowledge base's clarification memory, opened on the first clarification (never when it cannot be)."""

    def __init__(self, folder: Callable[[], Path], warn: Warn | None) -> None:
        self._folder, self._warn, self._memory = folder, warn, None

    def memory(self) -> ClarificationMemory | None:
        if self._memory is None:
            try:
                self._memory = ClarificationMemory(self._folder())
            except (sqlite3.Error, OSError) as e:
                self._say(f"clarifications not remembered: cannot open {self._folder()}: {e}")
                self._memory = False
        return self._memory or None

    def _say(self, message: str) -> None:
        if self._warn:
            self._warn(message)

    def close(self) -> None:
        if self._memory:
            self._memory.close()
        self._memory = None

    def follow_up(self, q: Question, doctor, result, reply: Callable[[str], str] | None, hooks: Hooks):
        """``result`` when it is not a clarifying question (or no reply came), else the doctor's answer to the
        question with the reply merged in, and the clarification record (None when none was merged)."""
        if not (q.interactive and result.answer.route == "clarify" and result.repairs):
            return result, None
        gate = result.trace.span("gate")
        key = ambiguity_key(q.text, _ambiguity(gate))
        memory = self.memory() if q.owner else None
        hit = memory.recall(q.owner, key) if memory is not None else None
        said = hit["reply"] if hit else (reply(result.answer.text).strip() if reply is not None else "")
        if not said:
            return result, None
        asked_back, round_id = result.answer.text, result.trace.debug_round_id
        doctor.interactive = False  # one clarifying question per query
        # the reply continues the same question: its runs share the debug round id
        merged = replace(q, text=f"{q.text} {said}")
        result = doctor.ask(merged.to_request(doctor.settings), hooks=replace(hooks, debug_round_id=round_id))
        if memory is not None and not hit:
            try:
                memory.remember(q.owner, key, question=q.text, clarifying_question=asked_back, reply=said,
                                debug_round_id=round_id)
            except sqlite3.Error as e:
                self._say(f"clarification not remembered: {e}")
        return result, Clarification(asked_back, said, bool(hit), round_id)


def _ambiguity(gate) -> dict:
    """The gate's ambiguity record (``Ambiguity.to_json()``), {} when the gate did not run."""
    if gate is None:
        return {}
    return dict(gate.output.ambiguity) if gate.output is not None else {}
