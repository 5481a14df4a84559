"""The container image, tested where no container runtime can build it: the Dockerfile read (a non-root user, the
server extra under the constraints, what it copies present), then its ENTRYPOINT + CMD run as they are, outside a
container, with the env the Dockerfile sets (its paths moved under a temporary folder, a free port for 8000), and its
HEALTHCHECK command run against it. The compose file's cluster shape is read too."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import ROOT, free_port

DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions, (KEYWORD, arguments), continuation lines joined and comments left out."""
    lines, joined = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        joined += line.rstrip().removesuffix("\\") + " " if line.rstrip().endswith("\\") else line
        if not line.rstrip().endswith("\\"):
            lines.append(joined)
            joined = ""
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip()) for line in lines]


def one(keyword: str) -> str:
    found = [args for kw, args in instructions() if kw == keyword]
    assert found, f"the Dockerfile has no {keyword}"
    return found[-1]


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, args in instructions():
        if keyword == "ENV":
            env.update(dict(pair.split("=", 1) for pair in shlex.split(args)))
    return env


def test_the_image_installs_the_server_extra_under_the_constraints_and_runs_as_no_root():
    assert one("FROM").startswith("python:3.1")
    installs = [args for kw, args in instructions() if kw == "RUN" and "pip install" in args]
    assert installs == ['pip install ".[${EXTRAS}]" -c constraints.txt'] and one("ARG") == "EXTRAS=server"
    user = one("USER")
    assert user not in ("root", "0") and f"useradd --create-home --uid 10001 {user}" in DOCKERFILE.read_text()
    assert json.loads(one("VOLUME")) == ["/data"] and dockerfile_env()["SQLITE_PATH"].startswith("/data/")
    for keyword, args in instructions():  # every COPY source exists and .dockerignore keeps it
        if keyword == "COPY":
            for source in args.split()[:-1]:
                assert (ROOT / source).exists(), source
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".git", ".venv", "db.sqlite3*", "tests"} <= ignored
    assert not {"harnessweb", "runs_app", "scenarios_app", "templates", "static", "constraints.txt"} & ignored


def healthcheck() -> list[str]:
    args = one("HEALTHCHECK")
    assert re.search(r"--interval=\d+s", args) and "CMD [" in args
    return json.loads(args.split("CMD", 1)[1])


def test_the_entry_point_serves_and_the_health_check_passes(tmp_path: Path):
    entrypoint, cmd = json.loads(one("ENTRYPOINT")), json.loads(one("CMD"))
    assert entrypoint == ["harness", "serve"] and cmd[cmd.index("--host") + 1] == "0.0.0.0"
    port = str(free_port())
    data = tmp_path / "data"
    data.mkdir()

    def moved(arg: str) -> str:  # the container's paths and port, here
        arg = arg.replace("/data/", f"{data}/").replace("/app", str(ROOT))
        return arg.replace("127.0.0.1:8000", f"127.0.0.1:{port}")

    command = [str(Path(sys.executable).parent / entrypoint[0]), *entrypoint[1:]]
    command += [port if arg == "8000" else moved(arg) for arg in cmd]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env.update({name: moved(value) for name, value in dockerfile_env().items()})
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = json.loads(server.stdout.readline() or "{}")  # harness serve's one JSON line, once it answers
        assert line.get("url") == f"http://127.0.0.1:{port}", line
        check = [sys.executable if arg == "python" else moved(arg) for arg in healthcheck()]
        assert subprocess.run(check, timeout=30).returncode == 0
        assert (data / "db.sqlite3").stat().st_size > 0  # the database is on the volume
        assert (data / "token").read_text().strip() == line["token"]
        refused = subprocess.run([*check[:-1], check[-1].replace("/healthz", "/no-such-health")], timeout=30)
        assert refused.returncode != 0  # the check fails when the URL does not answer 200
    finally:
        server.terminate()
        server.wait(30)


def test_the_compose_file_is_the_cluster_shape():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    assert services["postgres"]["image"].startswith("postgres:") and services["redis"]["image"].startswith("redis:")
    harness = services["harness"]
    assert harness["build"]["args"]["EXTRAS"] == "server,fast"
    assert (
        harness["environment"]["DATABASE_URL"].startswith("postgres://")
        and "@postgres:5432/" in harness["environment"]["DATABASE_URL"]
    )
    assert harness["environment"]["REDIS_URL"] == "redis://redis:6379/0"
    assert "${SECRET_KEY:?" in harness["environment"]["SECRET_KEY"]
    script = harness["command"][0]
    assert script.startswith("python manage.py check_cluster && python manage.py migrate --noinput")
    assert "uvicorn --host 0.0.0.0 --port 8000 --workers" in script
    assert {name: c["condition"] for name, c in harness["depends_on"].items()} == {
        "postgres": "service_healthy",
        "redis": "service_healthy",
    }
