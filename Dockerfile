# The harness server as a container: `harness serve` on 0.0.0.0:8000, its SQLite database on the /data volume (or
# the PostgreSQL that DATABASE_URL names), the example scenarios loaded. See docs/deploy.md; compose.yaml runs the
# cluster shape (PostgreSQL, Redis, N workers behind one address).
FROM python:3.12-slim

# The extras installed: `server` (Django, Channels, daphne); compose.yaml adds `fast` (uvicorn) for its workers.
ARG EXTRAS=server

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app \
    SQLITE_PATH=/data/db.sqlite3 \
    HARNESS_METRICS=0

WORKDIR /app
# What the package is built from, then the project itself (templates, static files and manage.py beside it).
COPY pyproject.toml constraints.txt MANIFEST.in harnessweb-activate.pth README.md ./
COPY build_backend/ build_backend/
COPY harnessweb/ harnessweb/
COPY runs_app/ runs_app/
COPY scenarios_app/ scenarios_app/
COPY templates/ templates/
COPY static/ static/
COPY manage.py ./
RUN pip install ".[${EXTRAS}]" -c constraints.txt

# Not root: the server runs as `harness`, which owns only the data volume.
RUN useradd --create-home --uid 10001 harness && mkdir -p /data && chown harness:harness /data
USER harness
VOLUME ["/data"]
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"]

ENTRYPOINT ["harness", "serve"]
CMD ["--host", "0.0.0.0", "--port", "8000", "--scenarios", "scenarios_app/examples", "--token-file", "/data/token"]
