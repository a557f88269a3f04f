"""A small judged set over long documents: known-item queries on the FastAPI docs and some PDFs.

Each query was written by reading one page of the collection (a section of it, in its own words rather
than its headings), and that page is the one relevant document (gain 1). The collection is every FastAPI
docs page (98, from 130 words to release-notes.md's 56,000) and four PDFs (tracemonkey.pdf, a 14-page
paper; GeoTopo, 117 German pages; a French tax form; a four-page LaTeX sample), read in place from
`../shared/corpus` and never copied. Long documents are the distractors that matter: release-notes.md
names nearly every feature once, so a ranking that favours a document for its length puts it first.
Paths are relative to the corpus folder.
"""

from __future__ import annotations

from typing import Final

FASTAPI: Final = "markdown/fastapi-docs"

PDFS: Final = (
    "pdf/pdfjs/tracemonkey.pdf",
    "pdf/py-pdf-sample-files/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf",
    "pdf/pdfjs/160F-2019.pdf",
    "pdf/py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf",
)
"""The PDFs of the collection, beside every Markdown page under FASTAPI."""

QUERIES: Final[tuple[tuple[str, str], ...]] = (
    ("explain concurrency with the story of ordering burgers and waiting for your number", "async.md"),
    ("when should a path operation function be declared with async def or plain def", "async.md"),
    ("restart the process automatically after it crashes and run it when the server boots", "deployment/concepts.md"),
    ("how many worker processes and how much memory should a deployment use", "deployment/concepts.md"),
    ("write a Dockerfile that copies requirements and uses the cache of image layers", "deployment/docker.md"),
    ("one uvicorn process per container in Kubernetes instead of several workers", "deployment/docker.md"),
    ("TLS termination proxy, certificates from Let's Encrypt and the SNI extension", "deployment/https.md"),
    ("certificate renewal and DNS records pointing a domain name to the server IP", "deployment/https.md"),
    (
        "split the app into several files with APIRouter and include the routers in main",
        "tutorial/bigger-applications.md",
    ),
    ("relative imports with one dot or two dots between packages of the app", "tutorial/bigger-applications.md"),
    ("create a hero table with SQLModel, an engine and a session dependency", "tutorial/sql-databases.md"),
    (
        "separate HeroCreate, HeroPublic and HeroUpdate models so the secret name is not returned",
        "tutorial/sql-databases.md",
    ),
    ("the app runs under a path prefix stripped by the proxy, set root_path", "advanced/behind-a-proxy.md"),
    ("forwarded headers X-Forwarded-Proto so redirects keep https", "advanced/behind-a-proxy.md"),
    ("read configuration from environment variables with pydantic-settings BaseSettings", "advanced/settings.md"),
    ("cache the settings object with lru_cache and override it in tests", "advanced/settings.md"),
    (
        "a database session opened before the request and closed after the response using yield",
        "tutorial/dependencies/dependencies-with-yield.md",
    ),
    (
        "exit code after yield runs even when an exception is raised, re-raise it in except",
        "tutorial/dependencies/dependencies-with-yield.md",
    ),
    (
        "declare OAuth2 scopes such as items:read and me, checked with SecurityScopes",
        "advanced/security/oauth2-scopes.md",
    ),
    ("hash passwords with pwdlib and argon2, sign JWT access tokens with an expiry", "tutorial/security/oauth2-jwt.md"),
    ("return HTML or a plain text response, or stream a file with StreamingResponse", "advanced/custom-response.md"),
    ("faster JSON serialisation with ORJSONResponse or UJSONResponse", "advanced/custom-response.md"),
    (
        "load a machine learning model once when the application starts with a lifespan context manager",
        "advanced/events.md",
    ),
    ("generate a TypeScript SDK from the OpenAPI schema with custom operation ids", "advanced/generate-clients.md"),
    ("raise HTTPException with a 404 status code and custom headers", "tutorial/handling-errors.md"),
    ("override the handler for RequestValidationError to return plain text", "tutorial/handling-errors.md"),
    ("type hints for a function that joins first name and last name, editor completion", "python-types.md"),
    ("filter the returned data with response_model so a password never goes out", "tutorial/response-model.md"),
    (
        "minimum and maximum length and a regular expression pattern on a query string",
        "tutorial/query-params-str-validations.md",
    ),
    ("send a callback request to an external API documented in OpenAPI", "advanced/openapi-callbacks.md"),
    ("webhooks that your app sends to users, declared with app.webhooks", "advanced/openapi-webhooks.md"),
    ("accept a websocket connection and send messages to several connected clients", "advanced/websockets.md"),
    ("mount a Flask or Django application with WSGIMiddleware", "advanced/wsgi.md"),
    ("run a task after returning the response, such as sending an email notification", "tutorial/background-tasks.md"),
    ("allow requests from another origin with CORSMiddleware and allowed origins", "tutorial/cors.md"),
    ("upload files with UploadFile and File, spooled to disk", "tutorial/request-files.md"),
    ("serve a folder of static files by mounting StaticFiles", "tutorial/static-files.md"),
    ("test the app with TestClient and pytest without running a server", "tutorial/testing.md"),
    ("replace a dependency during tests with dependency_overrides", "advanced/testing-dependencies.md"),
    ("set a cookie on the response returned by a path operation", "advanced/response-cookies.md"),
    ("partial updates with PATCH using exclude_unset and model_copy", "tutorial/body-updates.md"),
    (
        "HTTP basic authentication with a username and password compared with secrets.compare_digest",
        "advanced/security/http-basic-auth.md",
    ),
    ("run several Uvicorn worker processes with the fastapi run --workers option", "deployment/server-workers.md"),
    ("pin the FastAPI version in requirements because minor releases may break", "deployment/versions.md"),
    ("trace-based just-in-time compiler that type-specializes hot loops of JavaScript", PDFS[0]),
    ("trace trees, side exits and nested loops in the TraceMonkey virtual machine", PDFS[0]),
)
"""(query, the relevant document's path relative to the corpus; a bare name is under FASTAPI)."""


def relevant_path(name: str) -> str:
    """A query's relevant document as a path relative to the corpus folder."""
    return name if name.startswith("pdf/") else f"{FASTAPI}/{name}"
