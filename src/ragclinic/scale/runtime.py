"""Connecting to Ray, the optional engine for scale-out: ``--ray ADDRESS`` joins a running cluster
(``ray start --head`` / a ``ray://`` client address), ``--ray auto`` starts a local runtime on this machine for
the one command and stops it afterwards. Without the extra, ``--ray`` fails with the install command."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from ragclinic.errors import ConfigError

INSTALL = "pip install -e '.[ray]'"
# what every worker process gets: OpenMP spin-waiting costs 3-10x on a shared machine
WORKER_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}


def require_ray():
    try:
        import ray  # on use: ray, the ray extra
    except ImportError:
        raise ConfigError(f"--ray needs the ray extra, which is not installed: {INSTALL}") from None
    return ray


@contextmanager
def connected(address: str, cpus: int = 0) -> Iterator:
    """Ray, initialised for the block: ``auto`` starts a local runtime (``cpus`` CPUs, default all) bound to
    127.0.0.1; any other value is a cluster address. A runtime this process already joined is reused and left
    running."""
    ray = require_ray()
    if ray.is_initialized():
        yield ray
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # offline: no usage report is ever sent
    try:
        if address == "auto":
            ray.init(num_cpus=cpus or None, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
                     _node_ip_address="127.0.0.1", runtime_env=worker_env())
        else:
            ray.init(address=address, log_to_driver=False, logging_level="ERROR", runtime_env=worker_env())
    except ConnectionError as e:
        raise ConfigError(f"--ray {address}: no Ray cluster answers there ({e}); start one with `ray start "
                          "--head` or use --ray auto for a local runtime") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def cluster_cpus(ray) -> int:
    """The CPUs of the cluster Ray is connected to: the default number of workers."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def worker_env() -> dict:
    """The runtime_env a worker or replica starts with: the driver's RAGCLINIC_* settings as they are now (a
    worker must answer as the driver would) and WORKER_ENV."""
    return {"env_vars": {**WORKER_ENV, **{k: v for k, v in os.environ.items() if k.startswith("RAGCLINIC_")}}}
