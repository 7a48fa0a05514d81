"""The generator's hidden state, read while llama.cpp evaluates the prompt it answers from (issue 36).

llama.cpp calls an eval callback (``cb_eval`` in the context parameters) for every node of the compute graph:
first to ask whether the caller wants the node's result, then — for a node it wants — with the result computed.
Each layer's output (the residual stream after layer N) is the node named ``l_out-N``. :class:`HiddenCapture` asks
for the chosen layers only while the prompt is evaluated and keeps the last row of each (the vector at the last
prompt token: one ``n_embd`` row copied, never the whole tensor); the first sampling step disarms it, so the
generated tokens only pay the "no" to each ask (~1 µs a node, ~1 ms a token for the 1.5B model's ~1,100 nodes).
Computing a wanted node on its own does not change its value: the greedy output is the same with the callback
on and off (tests/models/test_hidden.py).

The tensors are read through ggml's own accessors (``ggml_get_name``, ``ggml_nelements``, ``ggml_nrows``,
``ggml_get_data_f32``), not a copy of the C struct layout, so a llama.cpp update that moves fields still works.
The callback is installed when the context is created (``llama_context_default_params`` patched for the duration
of ``Llama(...)``): llama.cpp reads it from the context parameters only. The patch is module-wide while it lasts;
``load_llama`` creates models one at a time, so no other model picks it up.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import re
import threading
from collections.abc import Iterator, Sequence

import numpy as np

from ragclinic.models.runtime import lib_dir, lib_file

_NAME = re.compile(rb"l_out-(\d+)")
log = logging.getLogger("ragclinic.models.hidden")
_CREATE = threading.Lock()  # the patched default parameters are module-wide while a context is created


def wants_hidden(settings) -> bool:
    """Whether the local model is loaded with the eval callback: for the answerability probe, or asked for."""
    return bool(getattr(settings, "llm_hidden_capture", False) or getattr(settings, "answer_probe", False))


def _ggml():
    lib = ctypes.CDLL(str(lib_file(lib_dir(), "libggml-base")))
    lib.ggml_get_name.restype, lib.ggml_get_name.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
    lib.ggml_nelements.restype, lib.ggml_nelements.argtypes = ctypes.c_int64, [ctypes.c_void_p]
    lib.ggml_nrows.restype, lib.ggml_nrows.argtypes = ctypes.c_int64, [ctypes.c_void_p]
    lib.ggml_element_size.restype, lib.ggml_element_size.argtypes = ctypes.c_size_t, [ctypes.c_void_p]
    lib.ggml_is_contiguous.restype, lib.ggml_is_contiguous.argtypes = ctypes.c_bool, [ctypes.c_void_p]
    lib.ggml_get_data_f32.restype, lib.ggml_get_data_f32.argtypes = ctypes.POINTER(ctypes.c_float), [ctypes.c_void_p]
    return lib


class HiddenCapture:
    """The last prompt token's output of chosen layers, captured during llama.cpp's own evaluation."""

    def __init__(self) -> None:
        import llama_cpp  # on use: loads llama.cpp

        self._lib = _ggml()
        self._want: frozenset[bytes] = frozenset()
        self.armed = False
        self.vectors: dict[int, np.ndarray] = {}
        self.error = ""
        self.calls = 0
        self._cb = llama_cpp.ggml_backend_sched_eval_callback(self._on_eval)  # kept alive with this object

    def _on_eval(self, tensor, ask, _user) -> bool:
        if not self.armed:
            return False
        lib = self._lib
        try:
            name = lib.ggml_get_name(tensor)
        except Exception as e:  # noqa: BLE001 - see below
            self.error = str(e)
            return ask is False
        if ask:
            return name in self._want
        try:
            if lib.ggml_element_size(tensor) != 4 or not lib.ggml_is_contiguous(tensor):
                raise ValueError("not a contiguous f32 tensor")
            n, rows = lib.ggml_nelements(tensor), lib.ggml_nrows(tensor)
            if rows <= 0 or n <= 0:
                raise ValueError("an empty tensor")
            width = n // rows
            data = np.ctypeslib.as_array(lib.ggml_get_data_f32(tensor), shape=(n,))
            self.vectors[int(_NAME.fullmatch(name).group(1))] = data[(rows - 1) * width:].copy()
            self.calls += 1
        except Exception as e:  # noqa: BLE001 - returning False would stop ggml's computation: never let it
            self.error = f"{name!r}: {e}"
        return True

    def arm(self, layers: Sequence[int]) -> None:
        """Capture ``layers`` during the next evaluation(s), until :meth:`take`."""
        self._want = frozenset(f"l_out-{n}".encode() for n in layers)
        self.vectors, self.error, self.armed = {}, "", bool(layers)

    def take(self) -> dict[int, np.ndarray]:
        """Disarm and return what was captured (the state after the last evaluated token of each layer); nothing
        when a node could not be read (logged: the answer goes on without the probe). Called from llama.cpp's
        sampler callback, so it never raises."""
        self.armed = False
        out, self.vectors = self.vectors, {}
        if self.error:
            log.warning("cannot read the hidden state (%s); the answer goes on without it", self.error)
            return {}
        return out

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """While a ``Llama(...)`` is created inside, its context gets this eval callback."""
        from llama_cpp import llama_cpp as lc  # on use: loads llama.cpp

        with _CREATE:
            original = lc.llama_context_default_params

            def patched():
                params = original()
                params.cb_eval = self._cb
                return params

            lc.llama_context_default_params = patched
            try:
                yield
            finally:
                lc.llama_context_default_params = original
