"""Settings: one module, small env helpers, safe defaults (SQLite and the in-memory channel layer)."""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from harnessweb.engine.ratelimit import parse_setting as parse_rate_limit
from harnessweb.engine.tokens import parse_default_usage
from harnessweb.engine.vcr import parse_mode as parse_vcr_mode

BASE_DIR = Path(__file__).resolve().parent.parent
# The dashboard's templates and static files: at a checkout's root, or inside an installed wheel's package, where
# the build backend puts them (build_backend/harness_backend.py).
SITE_DIR = Path(__file__).resolve().parent / "site"
if not SITE_DIR.is_dir():
    SITE_DIR = BASE_DIR


def envbool(name: str, default: str = "False") -> bool:
    return os.environ.get(name, default).lower() in ("1", "true", "yes", "on")


def envint(name: str, default: int) -> int:
    value = os.environ.get(name, str(default))
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, not {value!r}") from None


def envfloat(name: str, default: float, low: float, high: float, unit: str = "seconds") -> float:
    """A number from ``low`` to ``high`` (NaN and infinities refused); a bad value names the variable."""
    value = os.environ.get(name, str(default))
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not low <= number <= high:  # False for NaN too
        raise ImproperlyConfigured(f"{name} must be a number from {low:g} to {high:g} {unit}, not {value!r}")
    return number


SECRET_KEY = os.environ.get("SECRET_KEY", "harness-local-development-key-change-me-in-any-shared-deployment")
DEBUG = envbool("DEBUG", "False")
ALLOWED_HOSTS = os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver").split(",")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "ninja",  # its static files: the API docs page works offline
    "django_htmx",
    "harnessweb",  # project-level commands (login_link)
    "scenarios_app",
    "runs_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files (htmx, the stylesheet, the admin's) from the app itself: `make run` needs no web server.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # request.htmx: which requests are htmx swaps (harnessweb/htmx.py decides what a swap gets).
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "harnessweb.urls"
ASGI_APPLICATION = "harnessweb.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [SITE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

if os.environ.get("DATABASE_URL"):
    DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"], conn_max_age=60)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("SQLITE_PATH", str(BASE_DIR / "db.sqlite3")),
            "OPTIONS": {
                # IMMEDIATE + WAL: the test process, load_scenarios and the server write the same file.
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                # NORMAL: a commit survives the process (kill -9 included); the log is synced at checkpoints, which
                # come every 10000 pages rather than SQLite's 1000 (a commit cost 0.6 ms with the default, 0.2 ms so).
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=10000;",
            },
            # Keep the connection: the recorder writes every few milliseconds from one thread.
            "CONN_MAX_AGE": None,
            # A file, not memory, so that a server started by the tests sees the test database; one per test
            # process, so that two test runs on one machine never share it.
            "TEST": {"NAME": str(BASE_DIR / f".test-db-{os.getpid()}.sqlite3")},
        }
    }

if os.environ.get("REDIS_URL"):
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [os.environ["REDIS_URL"]]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [SITE_DIR / "static"]
WHITENOISE_USE_FINDERS = True  # serve straight from the app folders, no collectstatic step
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}

# The fake endpoints.
HARNESS_PACING = os.environ.get("HARNESS_PACING", "on").lower() not in ("off", "0", "false", "no")
HARNESS_MAX_BODY_BYTES = envint("HARNESS_MAX_BODY_BYTES", 5 * 1024 * 1024)
HARNESS_TIMEOUT_HOLD_MS = envint("HARNESS_TIMEOUT_HOLD_MS", 30_000)
# Seconds between a batch's states (validating → in_progress → finalizing → completed; runs_app/batches/); a create
# request's X-Harness-Batch-Step sets its own, 0: the first read finds it ended.
HARNESS_BATCH_STEP_S = envfloat("HARNESS_BATCH_STEP_S", 1, 0, 3600)
# Prometheus metrics at /metrics (runs_app/metrics.py): off by default; a token of scope read reads them, or anyone
# with HARNESS_METRICS_PUBLIC.
HARNESS_METRICS = envbool("HARNESS_METRICS")
HARNESS_METRICS_PUBLIC = envbool("HARNESS_METRICS_PUBLIC")
# What a request that plays no scenario and matches nothing gets: the deterministic lorem (seed 004), or "error": a
# 404 saying which rules were tried. The X-Harness-Unmatched request header says the same for one request.
HARNESS_UNMATCHED = os.environ.get("HARNESS_UNMATCHED", "lorem").strip().lower()
if HARNESS_UNMATCHED not in ("lorem", "error"):
    raise ImproperlyConfigured(f"HARNESS_UNMATCHED must be 'lorem' or 'error', not {HARNESS_UNMATCHED!r}")
# The file whose move tells every server process to reload its scenarios ("" = next to the database, "off" = ask
# the database on every request instead, for hosts that share the database but not a file system).
HARNESS_CATALOG_STAMP = os.environ.get("HARNESS_CATALOG_STAMP", "")
HARNESS_RECORDER_FLUSH_MS = envint("HARNESS_RECORDER_FLUSH_MS", 50)
# The usage of answers that set none: "counted" (the request and the answer) or "seed" (seed 000's 64 input, 32
# output, 96 total); a scenario's own default_usage wins, and a turn's usage over both.
try:
    HARNESS_DEFAULT_USAGE = parse_default_usage(os.environ.get("HARNESS_DEFAULT_USAGE", ""))
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None
# The rate-limit budget per API key that conversation requests count down and their answers' headers say
# (harnessweb/engine/ratelimit.py): "requests=60,tokens=100000,window_s=60", empty for generous defaults, "off": none.
try:
    HARNESS_RATE_LIMIT = parse_rate_limit(os.environ.get("HARNESS_RATE_LIMIT", ""))
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None
# Requests must carry their API key where their provider reads it, else the provider's own 401 (off: lorem for all).
HARNESS_REQUIRE_KEY = envbool("HARNESS_REQUIRE_KEY")
# A server one pytest session owns (the plugin sets it for the server it starts): a request naming no run belongs to
# the run of the test running now, which the plugin names (PUT /api/current-run; runs_app/endpoint/current.py).
HARNESS_SESSION_SERVER = envbool("HARNESS_SESSION_SERVER")
# Events kept in memory while the database is unreachable; beyond it the oldest are dropped, and counted on their run.
HARNESS_RECORDER_BUFFER = envint("HARNESS_RECORDER_BUFFER", 100_000)
# Seconds without a request after which a run is closed (runs_app/closing.py): a running one as abandoned, and a request
# of its conversation starts a new run (one naming it, X-Harness-Run, still continues it). Default 5 minutes.
try:
    HARNESS_RUN_IDLE_S = float(os.environ.get("HARNESS_RUN_IDLE_S", "300"))
except ValueError:
    HARNESS_RUN_IDLE_S = 0.0
if not 0 < HARNESS_RUN_IDLE_S < float("inf"):
    raise ImproperlyConfigured(
        f"HARNESS_RUN_IDLE_S must be a number of seconds above 0, not {os.environ.get('HARNESS_RUN_IDLE_S')!r}"
    )
# A benchmark-only switch (tests/benchmarks/load.py's recording-off rows): runs are resolved as usual but nothing is
# written. Never for a server people use: its runs exist nowhere.
HARNESS_BENCH_NO_RECORD = os.environ.get("HARNESS_BENCH_NO_RECORD") == "1"
# Key for the deterministic signatures of thinking blocks (not a secret: a test fixture).
HARNESS_SIGNATURE_KEY = os.environ.get("HARNESS_SIGNATURE_KEY", "scenario-harness-thinking-signature")
# Cassettes (seed 003's VCR modes): playback replays stored ones, record forwards to the real provider and stores
# the exchange, auto replays those that exist and records the others; strict fails where the others fall through.
try:
    HARNESS_VCR_MODE = parse_vcr_mode(os.environ.get("HARNESS_VCR_MODE", ""))
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None
HARNESS_VCR_STRICT = envbool("HARNESS_VCR_STRICT")
# Where recording forwards to, per provider: HARNESS_UPSTREAM_OPENAI_URL=https://api.openai.com, ..._ANTHROPIC_URL,
# ..._GEMINI_URL (scheme and host; the request's path is appended).
HARNESS_UPSTREAM = {
    name.removeprefix("HARNESS_UPSTREAM_").removesuffix("_URL").lower(): value.strip()
    for name, value in os.environ.items()
    if name.startswith("HARNESS_UPSTREAM_") and name.endswith("_URL") and value.strip()
}

# The LLM judge (runs_app/judging): any OpenAI-compatible Chat Completions endpoint, e.g. https://api.openai.com/v1.
# Unset, nothing is judged: the command and the pages say so.
HARNESS_JUDGE_BASE_URL = os.environ.get("HARNESS_JUDGE_BASE_URL", "").strip()
HARNESS_JUDGE_API_KEY = os.environ.get("HARNESS_JUDGE_API_KEY", "")
HARNESS_JUDGE_MODEL = os.environ.get("HARNESS_JUDGE_MODEL", "gpt-4o").strip()
HARNESS_JUDGE_TIMEOUT_S = envint("HARNESS_JUDGE_TIMEOUT_S", 120)
# How the judge is spoken to: openai (Chat Completions at {base}/chat/completions) or anthropic (Messages at
# {base}/v1/messages, x-api-key). An unset or placeholder key (seed 001's test-api-key) skips the judge.
HARNESS_JUDGE_PROTOCOL = os.environ.get("HARNESS_JUDGE_PROTOCOL", "openai").strip().lower() or "openai"
if HARNESS_JUDGE_PROTOCOL not in ("openai", "anthropic"):
    raise ImproperlyConfigured(f"HARNESS_JUDGE_PROTOCOL must be openai or anthropic, not {HARNESS_JUDGE_PROTOCOL!r}")

# The REST API: request size limit (a 413 beyond it) and pages' login.
HARNESS_API_MAX_BYTES = envint("HARNESS_API_MAX_BYTES", 10 * 1024 * 1024)
# A run's artifact (POST /api/runs/{id}/artifacts): a 413 beyond this many bytes of content.
HARNESS_ARTIFACT_MAX_BYTES = envint("HARNESS_ARTIFACT_MAX_BYTES", 2 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = HARNESS_API_MAX_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = HARNESS_API_MAX_BYTES
# Messages in the session, not a cookie: the admin shows a new API token once as a message.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
# A form sent without its CSRF token gets the dashboard's own 403 page, not Django's bare one.
CSRF_FAILURE_VIEW = "harnessweb.views.csrf_failure"
LOGOUT_REDIRECT_URL = "/login/"
