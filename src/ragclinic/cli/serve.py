"""`ragclinic serve`: the HTTP API (native and OpenAI-compatible) over one knowledge base."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import List, Optional

import typer

from ragclinic.cli.base import app, err, fail, handle_errors
from ragclinic.cli import supervised
from ragclinic.cli.options import KbOption

INSTALL = "pip install -e '.[serve]'"


@app.command("serve")
@handle_errors
def serve_cmd(
    kb: Optional[Path] = KbOption,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback by default; any other "
                             "address needs --api-key)."),
    port: int = typer.Option(8080, "--port", min=1, max=65535),
    allowed_host: List[str] = typer.Option([], "--allowed-host", metavar="NAME", show_default=False,
                                           help="Another Host name the server answers (repeatable; beside the "
                                                "allowed_hosts setting and --host): the name clients use, e.g. "
                                                "behind a proxy or with --host 0.0.0.0. '*': any."),
    api_key: List[str] = typer.Option([], "--api-key", metavar="KEY[:tenant=NAME]", show_default=False,
                                      help="An accepted key (repeatable); KEY:tenant=NAME sees only that tenant."),
    max_upload_mb: float = typer.Option(100.0, "--max-upload-mb", min=0.001, help="Largest request body."),
    workers_model: int = typer.Option(1, "--workers-model", min=1, max=1,
                                      help="Model workers (one: every request shares it, queued)."),
    readers: int = typer.Option(2, "--readers", min=1, max=16, help="Concurrent questions and searches."),
    llm: Optional[str] = typer.Option(None, "--llm", show_default=False, help="local | local-small | openai | none."),
    evals: Optional[Path] = typer.Option(None, "--evals", show_default=False,
                                         help="A folder of `ragclinic eval --out` runs for the UI's Evaluations page."),
    otlp_endpoint: Optional[str] = typer.Option(None, "--otlp-endpoint", show_default=False,
                                                help="Export OpenTelemetry spans (OpenInference conventions) over "
                                                     "OTLP/HTTP here (default: $OTEL_EXPORTER_OTLP_ENDPOINT; none: off)."),
    ray: Optional[str] = typer.Option(None, "--ray", metavar="ADDRESS|auto", show_default=False,
                                      help="Serve as a Ray Serve application (auto: a local runtime): --replicas "
                                           "copies of the server over the one knowledge base, ingest through one "
                                           "writer. The folder must be on storage every node sees (docs/scale.md). "
                                           "Needs the ray extra: pip install -e '.[ray]'."),
    replicas: int = typer.Option(2, "--replicas", min=1, help="With --ray: server replicas (each loads the model)."),
    replica_cpus: float = typer.Option(1.0, "--replica-cpus", min=0.0, help="With --ray: CPUs reserved per replica."),
    forwarded_allow_ips: List[str] = typer.Option(
        [], "--forwarded-allow-ips", metavar="ADDRESS", show_default=False,
        help="A reverse proxy whose X-Forwarded-For / X-Forwarded-Proto this server believes (repeatable or "
             "comma-separated; an address or a network such as 10.0.0.0/8). Default: none — the client address "
             "is the peer's own, so no client can name the address its wrong keys count against."),
) -> None:
    """Serve the knowledge base over HTTP: /v1/ask (JSON or server-sent events), /v1/chat/completions
    (OpenAI-compatible), /v1/retrieval, /v1/ingest, /v1/traces, /v1/diagnose, /v1/feedback, /healthz,
    /metrics. Refuses a non-loopback --host without --api-key. Stop with Ctrl-C."""
    try:
        import uvicorn  # on use: uvicorn, the serve extra

        from ragclinic.server.app import create_app  # on use: when the command runs (fast --help)
        from ragclinic.server.auth import Keys  # on use: when the command runs (fast --help)
    except ImportError as e:
        raise fail(f"the server is an optional extra ({e.name} is missing): {INSTALL}") from None
    from ragclinic.config import Settings  # on use: pydantic settings

    keys = Keys(api_key)
    if not _loopback(host) and not keys.required:
        raise fail(f"--host {host} is not a loopback address: give --api-key KEY (or bind 127.0.0.1)")
    settings = Settings.load(kb, llm=llm, allowed_hosts=_hosts(Settings.load(kb, llm=llm), host, allowed_host, keys))
    if ray:
        return _serve_on_ray(ray, settings, api_key, replicas, replica_cpus, host, port,
                             {"readers": readers, "max_upload_mb": max_upload_mb, "evals": evals,
                              "otlp_endpoint": otlp_endpoint})
    application = create_app(settings, keys, readers=readers, max_upload_mb=max_upload_mb, evals=evals,
                             otlp_endpoint=otlp_endpoint,
                             on_warning=lambda m: err.print(f"[yellow]warning:[/] {m}"))
    err.print(f"ragclinic serving {settings.kb} on http://{host}:{port}/ ({_access(host, port, keys.required)}; "
              f"pid {_command_pid()})")
    # SIGTERM / Ctrl-C: requests in flight get a few seconds, then the server stops (a long upload or question
    # no longer holds the process — its worker threads are daemons and end with it)
    uvicorn.run(application, host=host, port=port, log_level="warning", workers=workers_model,
                timeout_graceful_shutdown=SHUTDOWN_GRACE_S, **proxy_options(forwarded_allow_ips))


SHUTDOWN_GRACE_S = 5


def proxy_options(trusted: List[str]) -> dict:
    """uvicorn's proxy settings for ``--forwarded-allow-ips``: forwarded headers believed only from the proxies
    named. uvicorn's own default believes them from 127.0.0.1, so a client on loopback could name any address in
    X-Forwarded-For and spread its wrong keys over addresses it made up (or lock out one it named)."""
    ips = [p.strip() for item in trusted for p in item.split(",") if p.strip()]
    for ip in ips:
        if ip != "*":
            try:
                ipaddress.ip_network(ip, strict=False)
            except ValueError:
                raise fail(f"--forwarded-allow-ips {ip!r} is not an address or a network (e.g. 10.0.0.5 or "
                           f"10.0.0.0/8; '*': any peer, only behind a proxy that every client must pass)") from None
    if not ips:
        return {"proxy_headers": False, "forwarded_allow_ips": ""}
    return {"proxy_headers": True, "forwarded_allow_ips": ips}


def _hosts(settings, host: str, allowed_host: List[str], keys) -> list[str]:
    """The Host names the server answers: the setting's, --host's (unless a wildcard) and each --allowed-host."""
    from ragclinic.server.guard import bind_hosts  # on use: when the command runs (fast --help)

    hosts = list(dict.fromkeys([*settings.allowed_hosts, *(h.lower() for h in bind_hosts(host, allowed_host))]))
    if "*" in hosts and not keys.required:  # any Host name answered without a key: DNS rebinding is open again
        raise fail("allowed host '*' needs --api-key KEY: without keys a page under any name could use this server "
                   "(name the hosts instead: --allowed-host NAME)")
    return hosts


def _access(host: str, port: int, keyed: bool) -> str:
    return f"keys required: open http://{host}:{port}/?api_key=KEY" if keyed else "no key: loopback only"


def _command_pid() -> int:
    """The PID to signal: the supervisor's when there is one (cli/entry.py; its child dies with it), else ours."""
    return os.getppid() if supervised.SUPERVISED else os.getpid()


def _serve_on_ray(address: str, settings, keys: list[str], replicas: int, cpus: float, host: str, port: int,
                  options: dict) -> None:
    from ragclinic import wiring  # on use: the store and the models
    from ragclinic.scale.runtime import connected  # on use: the ray extra
    from ragclinic.server import ray_serve  # on use: the serve and ray extras

    wiring.open_kb(settings, sync_indexes=False).close()  # no knowledge base: its own "run ingest first" error
    with connected(address):
        err.print(f"ragclinic serving {settings.kb} on http://{host}:{port}/ through Ray Serve "
                  f"({replicas} replica{'s' if replicas > 1 else ''} and one writer; Ctrl-C to stop)")
        ray_serve.start(settings, keys, replicas=replicas, host=host, port=port, cpus=cpus, options=options,
                        blocking=True)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
