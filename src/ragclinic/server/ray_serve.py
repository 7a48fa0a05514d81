"""`serve --ray ADDRESS`: the HTTP server as a Ray Serve application (issue 18 §3).

Two deployments over one knowledge base folder:
- ``ragclinic`` (N replicas, the ingress): each replica builds the same FastAPI app as `ragclinic serve` —
  same routes, keys and UI — with its own clinic pool and model, answering from the last committed version
  (SQLite is read in WAL mode; each replica's indexes catch up with the version they see).
- ``ragclinic-writer`` (1 replica): every ingest (`POST /v1/ingest`, the UI's upload) is sent to it, so writes
  are serialised through one process instead of racing for the knowledge base's lock.

A replica needs the knowledge base folder at the same path on its node — shared storage (NFS, a mounted
volume) for several nodes, or a copy per node when serving read-only (then ingest on one node and copy the
folder again) — and ragclinic with its model extras installed. Uploads are written under ``KB/uploads`` by the
replica that received them and read there by the writer, so they need the shared folder too.
"""

from __future__ import annotations

from pathlib import Path

from ragclinic.clinic import Clinic
from ragclinic.ingest.result import IngestResult
from ragclinic.scale.runtime import worker_env
from ragclinic.server.app import create_app
from ragclinic.server.auth import Keys

APP = "ragclinic"
WRITER = "ragclinic-writer"


class KbWriter:
    """The one replica that ingests (no language model: ingest needs none)."""

    def __init__(self, settings) -> None:
        self.clinic = Clinic(settings, model=None, sync_indexes=False)

    def ingest(self, folder: str, tags: dict) -> dict:
        return self.clinic.ingest([Path(folder)], tags).to_json()


def _builder(settings, keys: list[str], options: dict):
    """The ingress app, built on each replica (serve.ingress calls it there)."""

    def build():
        from ray import serve  # on use: ray, the ray extra

        writer = serve.get_deployment_handle(WRITER, app_name=APP)

        def via(folder: Path, tags: dict) -> IngestResult:
            return IngestResult(**writer.ingest.remote(str(folder), tags).result())

        return create_app(settings, Keys(keys), ingest_via=via, **options)

    return build


def application(settings, keys: list[str], replicas: int, cpus: float = 1.0, options: dict | None = None):
    """The Ray Serve application: ``replicas`` ingress replicas of ``cpus`` CPUs each, and the writer."""
    from ray import serve  # on use: ray, the ray extra

    class Ingress:
        def __init__(self, writer) -> None:  # bound to the writer so the application deploys it
            self.writer = writer

    env = worker_env()
    ingress = serve.deployment(name=APP, num_replicas=replicas, ray_actor_options={"num_cpus": cpus, "runtime_env": env})(
        serve.ingress(_builder(settings, keys, options or {}))(Ingress))
    writer = serve.deployment(name=WRITER, num_replicas=1, ray_actor_options={"num_cpus": 0, "runtime_env": env})(
        KbWriter)
    return ingress.bind(writer.bind(settings))


def start(settings, keys: list[str], *, replicas: int, host: str, port: int, cpus: float = 1.0,
          options: dict | None = None, blocking: bool = False):
    """Deploy on the cluster Ray is connected to, HTTP on ``host:port``; ``blocking`` waits until Ctrl-C."""
    from ray import serve  # on use: ray, the ray extra

    serve.start(http_options={"host": host, "port": port})
    return serve.run(application(settings, keys, replicas, cpus, options), name=APP, route_prefix="/",
                     blocking=blocking)
