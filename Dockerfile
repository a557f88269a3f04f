# The production image of ac-context: the FastAPI service and the Inngest functions (`functions.app:app`,
# started by uvicorn in production mode, the default of `functions.app:app`).
#
#   docker build -t ac-context .
#   docker run -p 8000:8000 -e DATABASE_URL=… -e INNGEST_SIGNING_KEY=… -e INNGEST_EVENT_KEY=… \
#              -e AC_CONTEXT_API_TOKEN=… -e INNGEST_SERVE_ORIGIN=https://ctx.example.com \
#              -e AC_CONTEXT_STEP_ENCRYPTION_KEYS=$(openssl rand -hex 32) ac-context
#
# Production refuses to start without INNGEST_SIGNING_KEY, INNGEST_EVENT_KEY, AC_CONTEXT_API_TOKEN,
# INNGEST_SERVE_ORIGIN and AC_CONTEXT_STEP_ENCRYPTION_KEYS (functions/_production.py; one line naming every
# missing one). Give it a DATABASE_URL too: without one the app starts the embedded PostgreSQL of
# `make demo` under AC_CONTEXT_DATA_DIR, which is for one machine, not for a deployment. Migrations run at
# start under an advisory lock, so several replicas can start together. docs/operations.md lists every setting.

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml constraints.txt README.md ./
COPY state ./state
COPY context ./context
COPY knowledge ./knowledge
COPY memory ./memory
COPY functions ./functions
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --upgrade pip \
 && /opt/venv/bin/pip install -c constraints.txt .

FROM python:3.11-slim
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/app \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    AC_CONTEXT_DATA_DIR=/var/lib/ac-context
RUN groupadd --system --gid 10001 app \
 && useradd --system --uid 10001 --gid app --home-dir /app --create-home app \
 && mkdir -p /var/lib/ac-context \
 && chown app:app /var/lib/ac-context
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
# The sources sit beside migrations/ (the runner finds them relative to state/), and PYTHONPATH puts this
# copy first; the installed package in the venv is the same code and provides the `ac-context` script.
COPY --chown=app:app migrations ./migrations
COPY --chown=app:app state ./state
COPY --chown=app:app context ./context
COPY --chown=app:app knowledge ./knowledge
COPY --chown=app:app memory ./memory
COPY --chown=app:app functions ./functions
USER app
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=40s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status == 200 else 1)"]
CMD ["uvicorn", "functions.app:app", "--host", "0.0.0.0", "--port", "8000", "--proxy-headers", "--forwarded-allow-ips", "*", "--timeout-keep-alive", "75", "--backlog", "2048"]
