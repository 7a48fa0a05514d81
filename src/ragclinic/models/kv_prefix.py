"""System-turn KV states kept between llama.cpp calls (see llama.py _fresh_state for why only at that boundary).

The live context holds the last call's system turn; ``PrefixStates`` keeps the KV state of the last few
*other* system turns too (English and Chinese answer prompts, the doctor's prompt variants, the naive peer's
prompt), copied out with ``llama_state_seq_get_data`` right after the system turn was evaluated alone and
copied back into an empty cache — the same cells, the same bytes, so the rest of the prompt is computed
exactly as after a fresh evaluation. ~30 KB a token for the 1.5B model (28 layers × K and V × 256 × f16):
a 100-token system turn is ~3 MB.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict

KEEP = 8  # system turns kept besides the live one


class PrefixStates:
    def __init__(self, llm, keep: int = KEEP) -> None:
        self.llm, self.keep = llm, keep
        self._saved: OrderedDict[tuple[int, ...], bytes] = OrderedDict()

    def save(self, head: tuple[int, ...]) -> None:
        """Keep the KV state of sequence 0, which holds exactly ``head`` (just evaluated from empty)."""
        import llama_cpp  # on use: loads llama.cpp

        ctx = self.llm._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        buf = (ctypes.c_uint8 * size)()
        n = llama_cpp.llama_state_seq_get_data(ctx, buf, size, 0)
        if 0 < n <= size:
            self._saved[head] = bytes(buf)[:n]
            self._saved.move_to_end(head)
            while len(self._saved) > self.keep:
                self._saved.popitem(last=False)

    def restore(self, head: tuple[int, ...]) -> bool:
        """Put ``head``'s kept state into the (emptied) cache; False when it is not kept or does not fit."""
        import llama_cpp  # on use: loads llama.cpp

        data = self._saved.get(head)
        if data is None:
            return False
        llm = self.llm
        llm.reset()
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, buf, len(data), 0) != len(data):
            llm._ctx.kv_cache_seq_rm(-1, 0, -1)
            self._saved.pop(head, None)
            return False
        llm.input_ids[:len(head)] = head
        llm.n_tokens = len(head)
        llm._requires_eval = True
        self._saved.move_to_end(head)
        return True
