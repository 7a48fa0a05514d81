"""`ragclinic serve`: the HTTP face of the Clinic (FastAPI + uvicorn; docs/server.md).

``app.create_app`` builds the application over a knowledge base: the native API (``/v1/ask``, retrieval,
ingest, traces, diagnose, feedback), the OpenAI-compatible ``/v1/chat/completions``, ``/healthz`` and the
Prometheus ``/metrics``. Keys and tenants: ``auth.py``; one model shared by every request: ``pool.py``.
The server is an optional extra: ``pip install -e '.[serve]'``.
"""
