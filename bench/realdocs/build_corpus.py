"""Build the real-document sets of issue 35 from Debian packages nobody here wrote (bench data, never shipped):

  pg15       English: a part of the PostgreSQL 15 manual (postgresql-doc-15, HTML; PostgreSQL Licence) — the
             tutorial, client authentication, server set-up and operation, backup, routine maintenance, indexes,
             data definition, data types and the client applications (~140 pages).
  debref-zh  Chinese: Debian Reference in Simplified Chinese (debian-reference-zh-cn, HTML; GPL-2+), the preface
             and chapters 1–5 (one page per chapter).

    .venv/bin/python bench/realdocs/build_corpus.py            # → bench/out/realdocs/{pg15,debref-zh}/ + MANIFEST.json
    .venv/bin/python bench/realdocs/build_corpus.py --sets debref-zh-small   # + debref-zh-small-questions.jsonl

Downloads with `apt-get download` (the Debian registry) into bench/out/realdocs/debs/, once.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "out" / "realdocs"
# pinned: the question files' gold snippets quote these versions (apt-get download NAME=VERSION; sha256 checked)
PINS = {"postgresql-doc-15": ("15.18-0+deb12u1", "3c598277a463c44d672daa2c335deb8d8252e1852fb025fd4578ea2d9a1b90f0"),
        "debian-reference-zh-cn": ("2.100", "6d2d8d9a646397e28b04cdff23d2e4374101ebf9be348e35961af62c8a2d0977")}
SETS = {
    "pg15": ("postgresql-doc-15", "usr/share/doc/postgresql-doc-15/html",
             ["tutorial*.html", "backup*.html", "continuous-archiving.html", "routine-*.html", "maintenance.html",
              "runtime*.html", "auth-*.html", "client-authentication*.html", "app-*.html", "indexes*.html",
              "ddl*.html", "datatype*.html"]),
    "debref-zh": ("debian-reference-zh-cn", "usr/share/debian-reference",
                  ["pr01.zh-cn.html", "ch01.zh-cn.html", "ch02.zh-cn.html", "ch03.zh-cn.html", "ch04.zh-cn.html",
                   "ch05.zh-cn.html"]),
    # issue 53's learning runs: four pages (87 chunks) so `kb learn` on these CPUs ends within an hour
    "debref-zh-small": ("debian-reference-zh-cn", "usr/share/debian-reference",
                        ["pr01.zh-cn.html", "ch03.zh-cn.html", "ch04.zh-cn.html", "ch05.zh-cn.html"]),
}
# a set built from part of another keeps the questions whose gold page it holds, and every unanswerable one
QUESTIONS = {"debref-zh-small": Path(__file__).with_name("debref-zh-questions.jsonl")}


def download(package: str, debs: Path) -> Path:
    version, sha = PINS[package]
    deb = debs / f"{package}_{version.replace(':', '%3a')}_all.deb"
    if not deb.exists():
        debs.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", f"{package}={version}"], cwd=debs, check=True, capture_output=True)
    if hashlib.sha256(deb.read_bytes()).hexdigest() != sha:
        raise SystemExit(f"{deb.name}: sha256 differs from the pinned one; the gold snippets quote that version")
    return deb


def build(name: str) -> dict:
    package, inside, patterns = SETS[name]
    deb = download(package, OUT / "debs")
    target = OUT / name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
        pages = sorted(p for p in (Path(tmp) / inside).iterdir()
                       if any(fnmatch.fnmatch(p.name, pat) for pat in patterns))
        for p in pages:
            shutil.copy2(p, target / p.name)
    if name in QUESTIONS:
        rows = [json.loads(line) for line in QUESTIONS[name].read_text(encoding="utf-8").splitlines() if line]
        kept = [r for r in rows if r["expect_refusal"] or (target / r["page"]).exists()]
        (OUT / f"{name}-questions.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept), encoding="utf-8")
    return {"package": deb.name, "sha256": hashlib.sha256(deb.read_bytes()).hexdigest(), "pages": len(pages),
            "bytes": sum(p.stat().st_size for p in target.iterdir())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(SETS))
    args = ap.parse_args()
    manifest = {name: build(name) for name in args.sets.split(",")}
    (OUT / "MANIFEST.json").write_text(json.dumps(manifest, indent=1))
    print(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
