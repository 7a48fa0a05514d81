"""A small multi-document world for the graph tests: three suppliers, two yards, one risk named in three reports."""

from __future__ import annotations

from pathlib import Path

from ragclinic import Clinic

DOCS = {
    "contract-nordtek.md": "# Contract: Nordtek Components\n\nHalvorsen Marine signed a supply contract with Nordtek "
                           "Components in 2023. Nordtek Components delivers steering valves to the Bergen Yard.\n\n"
                           "## Risks\n\nLate deliveries by Nordtek Components are the main supply risk for the "
                           "Bergen Yard.\n",
    "contract-fjordline.md": "# Contract: Fjordline Steel\n\nHalvorsen Marine buys hull plates from Fjordline Steel. "
                             "Fjordline Steel ships the plates to the Gdynia Plant every month.\n\n## Risks\n\n"
                             "Corrosion of hull plates at the Gdynia Plant was reported by Piotr Nowak.\n",
    "incident-gdynia.md": "# Incident at the Gdynia Plant\n\nPiotr Nowak, manager of the Gdynia Plant, found weld "
                          "corrosion on hull plates from Fjordline Steel. Piotr Nowak asked Maja Lund of Hull "
                          "Engineering to inspect the welds.\n",
    "teams.md": "# Teams\n\nMaja Lund leads Hull Engineering at the Bergen Yard. Hull Engineering works with the "
                "Propulsion team of Erik Dahl on every new vessel. Erik Dahl reviews the steering valves from Nordtek "
                "Components.\n",
}


def write_docs(root: Path, docs: dict[str, str] = DOCS) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def graph_clinic(tmp_path: Path, mode: str = "fast", model=None, docs: dict[str, str] = DOCS, **settings) -> Clinic:
    c = Clinic.open(tmp_path / "kb", model=model, embedder="fake", judge="lexical", cache_dir=tmp_path / "cache",
                    llm="none" if model is None else "local", graph=mode, **settings)
    c.ingest([write_docs(tmp_path / "docs", docs)])
    return c
