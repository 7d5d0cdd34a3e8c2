# aye in a container: `aye serve` on 0.0.0.0:8080, its SQLite store, generated tokens and
# aye.toml in the /data volume unless AYE_DATABASE_URL says otherwise (compose.yaml: PostgreSQL).
# Not built here (the machine it was written on has no container runtime); CI lints it with hadolint.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The package only (pyproject.toml's packages): no tests, benchmarks or docs in the image.
COPY pyproject.toml README.md /src/
COPY bot /src/bot
COPY core /src/core
COPY store /src/store
COPY handlers /src/handlers
COPY ask_api /src/ask_api
# The Python client is a package of the server too (its verifiers are the external door's).
COPY clients/python/aye_client /src/clients/python/aye_client
RUN pip install /src && rm -rf /src

# A user of its own, owning the store's folder (a new named volume takes this ownership).
RUN groupadd --system --gid 10001 aye \
    && useradd --system --uid 10001 --gid aye --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin aye \
    && mkdir /data && chown aye:aye /data && chmod 0700 /data
# Numeric, so that a runtime checking "not root" (Kubernetes' runAsNonRoot) can tell.
USER 10001:10001
WORKDIR /data
VOLUME ["/data"]

ENV AYE_HOST=0.0.0.0 \
    AYE_PORT=8080 \
    AYE_DATABASE_URL=sqlite+aiosqlite:////data/aye.db
EXPOSE 8080

# 503 (store unreachable) or no answer fails; no proxy for a request to itself.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:%s/healthz' % os.environ.get('AYE_PORT', '8080'), timeout=4)"]

# aye handles SIGTERM itself (parked agents answered, sends finished, exit 0 within 10 s).
ENTRYPOINT ["aye"]
CMD ["serve"]
