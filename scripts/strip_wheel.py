"""Finish a llama-cpp-python wheel built with GGML_CPU_ALL_VARIANTS (called by install-llama.sh).

Removes the CPU variants named by --exclude (the AMX one), moves every ``libggml-cpu-*.so`` module next to
``libllama.so`` in ``llama_cpp/lib`` (where ragclinic loads them from), writes ``llama_cpp/lib/
ragclinic-build.json`` (flags, tag, variants kept and removed: what ``ragclinic check`` reports) and rewrites
the wheel's RECORD. Fails when the wheel holds no CPU variant, so a build that went wrong is never stored.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path

VARIANT = re.compile(r"(?:^|/)libggml-cpu-([A-Za-z0-9_.]+)\.so$")


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def finish(wheel: Path, exclude: list[str], flags: str, tag: str) -> dict:
    with zipfile.ZipFile(wheel) as zin:
        entries = [(info, zin.read(info)) for info in zin.infolist()]
    record_name = next(i.filename for i, _ in entries if i.filename.endswith(".dist-info/RECORD"))
    kept, removed, out = [], [], []
    for info, data in entries:
        name = info.filename
        if name == record_name:
            continue
        m = VARIANT.search(name)
        if m:
            variant = m.group(1)
            if any(x in variant for x in exclude):
                removed.append(variant)
                continue
            kept.append(variant)
            name = f"llama_cpp/lib/libggml-cpu-{variant}.so"
        out.append((info, name, data))
    if not kept:
        sys.exit(f"{wheel.name}: no libggml-cpu-*.so variant in the wheel; was it built with "
                 "GGML_BACKEND_DL=ON and GGML_CPU_ALL_VARIANTS=ON?")
    build = {"version": wheel.name.split("-")[1], "tag": tag, "cmake_flags": flags.split(),
             "variants": sorted(kept), "removed": sorted(removed)}
    out.append((None, "llama_cpp/lib/ragclinic-build.json", json.dumps(build, indent=1).encode()))
    tmp = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
        record = []
        for info, name, data in out:
            zi = zipfile.ZipInfo(name, date_time=info.date_time if info else (2026, 1, 1, 0, 0, 0))
            zi.external_attr = info.external_attr if info else 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zout.writestr(zi, data)
            record.append(_record_line(name, data))
        record.append(f"{record_name},,")
        zout.writestr(record_name, "\n".join(record) + "\n")
    tmp.replace(wheel)
    return build


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("wheel", type=Path)
    ap.add_argument("--exclude", default="", help="comma-separated substrings of variant names to drop")
    ap.add_argument("--flags", default="")
    ap.add_argument("--tag", default="")
    a = ap.parse_args()
    build = finish(a.wheel, [x for x in a.exclude.split(",") if x], a.flags, a.tag)
    print(f"{a.wheel.name}: CPU variants {', '.join(build['variants'])}; removed {', '.join(build['removed']) or 'none'}")


if __name__ == "__main__":
    main()
