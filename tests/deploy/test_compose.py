"""The distributed deployment (docker/compose.yaml, docker/*.Dockerfile, docs/deploy.md),
checked without Docker: every service's environment is the settings module's, every
command is one this suite starts, processing runs only on the GPU node, each service has a
health check, the production settings pass `check --deploy`; and the compose file's
commands, started here on loopback, answer their own health checks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import httpx
import pytest
from django.core.management import get_commands

from config.celery_app import WORK_QUEUES
from tests.deploy.local import (
    assert_process_answers,
    celery_inspect,
    command_run,
    healthcheck_argv,
    local_argv,
    local_env,
    started,
)
from tests.deploy.stack import (
    COMPOSE_FILE,
    DEPLOY_DOC,
    FIRST_PARTY,
    REPO_ROOT,
    MissingVariable,
    Service,
    argv_option,
    compose_load,
    compose_variable_names,
    copy_sources,
    doc_table_names,
    dockerfile_stages,
    dockerignored,
    documented_variables,
    documented_vllm_serve,
    dot_env,
    interpolate,
    node_of,
    queues_of,
    services_of,
    settings_default,
    settings_env_reads,
    stage_chain,
)
from tests.e2e.processes import Services, free_port, wait_until

PROCESSING_QUEUES = {"process", "retry"}
# What the interpreter, pip and apt read: the only other names an image's ENV may set.
RUNTIME_VARIABLES = {
    "PATH",
    "VIRTUAL_ENV",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "PIP_NO_CACHE_DIR",
    "PIP_DISABLE_PIP_VERSION_CHECK",
    "DEBIAN_FRONTEND",
    "DJANGO_SETTINGS_MODULE",
}


def app_services(stack: Mapping[str, Service]) -> list[Service]:
    """The stack built from this repository's Dockerfiles."""
    return [service for service in stack.values() if service.dockerfile is not None]


def workers(stack: Mapping[str, Service]) -> list[Service]:
    return [service for service in app_services(stack) if service.argv[:4] == ["celery", "-A", "config", "worker"]]


def the_gpu_worker(stack: Mapping[str, Service]) -> Service:
    [gpu_worker] = [worker for worker in workers(stack) if queues_of(worker.argv) & PROCESSING_QUEUES]
    return gpu_worker


def the_model_server(stack: Mapping[str, Service]) -> Service:
    [server] = [service for service in stack.values() if service.gpu_devices]
    return server


# --- Assertions ---------------------------------------------------------------------------


def assert_command_is_one_the_suite_runs(argv: list[str], *, where: str) -> None:
    """The program and arguments are ones this suite starts or checks: the ASGI server, a
    Celery worker on known queues, beat, or an existing management command."""
    assert argv, f"{where}: no command"
    if argv[0] == "uvicorn":
        assert argv[1] == "config.asgi:application", where
    elif argv[:3] == ["celery", "-A", "config"]:
        assert argv[3] in ("worker", "beat"), where
        if argv[3] == "worker":
            assert queues_of(argv) <= set(WORK_QUEUES), f"{where}: unknown queue in {argv}"
    elif argv[:2] == ["python", "manage.py"]:
        assert argv[2] in get_commands(), f"{where}: no management command {argv[2]!r}"
    else:
        raise AssertionError(f"{where}: {argv} is not a command the test suite runs")


def assert_healthcheck(service: Service, *expected: str) -> None:
    healthcheck = service.spec.get("healthcheck")
    assert healthcheck, f"{service.name} has no health check"
    assert not healthcheck.get("disable"), service.name
    test = healthcheck["test"]
    text = " ".join(test) if isinstance(test, list) else test
    assert isinstance(test, str) or test[0] in ("CMD", "CMD-SHELL"), service.name
    for part in expected:
        assert part in text, f"{service.name}'s health check {text!r} does not contain {part!r}"


# --- Interpolation (the reading the other tests rely on) ----------------------------------------


def test_interpolation_follows_composes_rules():
    variables = {"SET": "x", "EMPTY": ""}
    assert interpolate("$SET ${SET} $$SET ${UNSET:-d} ${EMPTY:-d} ${EMPTY-d}", variables) == "x x $SET d d "
    assert interpolate("${UNSET:-https://${SET}/a}", variables) == "https://x/a"
    assert interpolate("${SET:+on} ${UNSET:+on}", variables) == "on "
    with pytest.raises(MissingVariable):
        interpolate("${EMPTY:?needed}", variables)


# --- The compose file ------------------------------------------------------------------------


def test_env_example_sets_every_variable_the_compose_file_requires():
    complete = dot_env()
    compose_load(complete)  # nothing missing
    for name in complete:
        if "${" + name + ":?" in COMPOSE_FILE.read_text():
            with pytest.raises(MissingVariable):
                compose_load({key: value for key, value in complete.items() if key != name})


def test_every_compose_variable_is_a_setting_or_documented_in_deploy_md():
    names = compose_variable_names()
    documented = documented_variables() | doc_table_names(DEPLOY_DOC)
    assert names - documented == set()


def test_app_containers_read_only_variables_the_settings_module_or_readme_documents(stack):
    documented = documented_variables()
    for service in app_services(stack):
        assert set(service.environment) - documented == set(), service.name


def test_every_app_command_is_one_the_test_suite_runs(stack):
    model_server = the_model_server(stack)
    for service in app_services(stack):
        if service is not model_server:
            assert_command_is_one_the_suite_runs(service.argv, where=service.name)


def test_every_queue_has_a_consumer_and_processing_runs_only_on_the_gpu_node(stack):
    consumed = set().union(*(queues_of(worker.argv) for worker in workers(stack)))
    assert consumed == set(WORK_QUEUES)
    gpu_worker = the_gpu_worker(stack)
    assert queues_of(gpu_worker.argv) == PROCESSING_QUEUES
    assert gpu_worker.dockerfile == REPO_ROOT / "docker" / "gpu.Dockerfile"
    for worker in workers(stack):
        if worker is not gpu_worker:
            assert queues_of(worker.argv) & PROCESSING_QUEUES == set(), worker.name


def test_the_model_server_is_the_recommended_vllm_command_on_a_reserved_gpu(stack):
    server = the_model_server(stack)
    [device] = server.gpu_devices
    assert (device["driver"], device["count"], device["capabilities"]) == ("nvidia", 1, ["gpu"])
    assert server.dockerfile == REPO_ROOT / "docker" / "gpu.Dockerfile"
    documented = documented_vllm_serve()
    assert server.argv[:3] == documented[:3] == ["vllm", "serve", settings_default("VLLM_MODEL")]
    # Every flag of docs/engines.md with its value; the API key comes from the environment
    # (vLLM reads VLLM_API_KEY), not the command line.
    for flag in [part for part in documented if part.startswith("--") and part != "--api-key"]:
        assert server.option(flag) == argv_option(documented, flag), flag
    assert "--api-key" not in server.argv
    assert server.environment["VLLM_API_KEY"] == the_gpu_worker(stack).environment["VLLM_API_KEY"]


def test_the_gpu_nodes_page_pool_fills_vllms_sequences_at_the_defaults(stack):
    """One worker process on the node: its page pool is vLLM's --max-num-seqs, and it runs
    as many batches at once (threads) as the pool has pages, so books on their 1-page rung
    fill it together."""
    gpu_worker = the_gpu_worker(stack)
    pool_pages = int(gpu_worker.environment["ENGINE_CONCURRENCY"])
    assert pool_pages == int(the_model_server(stack).option("--max-num-seqs") or 0)
    assert gpu_worker.option("--pool", "-P") == "threads"
    assert int(gpu_worker.option("-c", "--concurrency") or 0) >= pool_pages
    assert gpu_worker.environment["VLLM_BASE_URL"] == "http://vllm:8000"


def test_batches_per_gpu_node_and_pages_per_batch_are_the_two_gpu_knobs(variables):
    """GPU_WORKER_CONCURRENCY is the GPU worker's -c (batches at once on the node);
    ENGINE_CONCURRENCY, the setting, is the page pool: the pages the worker has at vLLM,
    drawn from all of them. Both documented."""
    tuned = services_of(compose_load({**variables, "GPU_WORKER_CONCURRENCY": "3", "ENGINE_CONCURRENCY": "21"}))
    gpu_worker = the_gpu_worker(tuned)
    assert gpu_worker.option("-c", "--concurrency") == "3"
    assert gpu_worker.environment["ENGINE_CONCURRENCY"] == "21"
    assert "ENGINE_CONCURRENCY" in settings_env_reads()
    assert {"GPU_WORKER_CONCURRENCY", "VLLM_MAX_NUM_SEQS"} <= doc_table_names(DEPLOY_DOC)
    for worker in workers(tuned):
        if worker is not gpu_worker:
            assert "ENGINE_CONCURRENCY" not in worker.environment, worker.name  # no batch runs there


def test_the_web_node_and_every_worker_serve_metrics_from_all_their_processes(stack, variables):
    web = stack["web"]
    assert web.environment["METRICS_TOKEN"] == variables["METRICS_TOKEN"]
    assert "${METRICS_TOKEN:?" in COMPOSE_FILE.read_text()  # no stack without the token
    for service in [web, *workers(stack)]:
        folder = service.environment.get("PROMETHEUS_MULTIPROC_DIR")
        assert folder, f"{service.name}: prefork processes without PROMETHEUS_MULTIPROC_DIR"
        # A tmpfs: empty at each start, so a restart does not add old counts again.
        assert folder in service.spec.get("tmpfs", []), service.name
    for worker in workers(stack):
        port = int(worker.environment.get("WORKER_METRICS_PORT") or 0)
        assert port > 0, worker.name
        assert "ports" not in worker.spec, f"{worker.name}: scraped inside the compose network only"
    for name in ("beat", "migrate"):
        assert "WORKER_METRICS_PORT" not in stack[name].environment, name
    assert {"METRICS_TOKEN", "WORKER_METRICS_PORT", "PROMETHEUS_MULTIPROC_DIR"} <= documented_variables()


def test_each_long_running_service_has_a_health_check_of_its_kind(stack):
    expected = {
        "postgres": ["pg_isready"],
        "redis": ["redis-cli", "ping"],
        "minio": ["mc", "ready"],
        "web": ["http://localhost:8000/healthz"],
        "vllm": ["http://localhost:8000/health"],
        "beat": ["celerybeat-schedule"],
    }
    for worker in workers(stack):
        expected[worker.name] = [f"celery -A config inspect ping -d {node_of(worker.argv)}"]
    for service in stack.values():
        if not service.one_shot:
            assert_healthcheck(service, *expected[service.name])
    assert {name for name, service in stack.items() if service.one_shot} == {"migrate", "minio-setup"}


def test_dependencies_wait_for_healthy_services_and_finished_one_shots(stack):
    for service in stack.values():
        depends_on = service.spec.get("depends_on", {})
        assert isinstance(depends_on, dict), f"{service.name}: depends_on without conditions"
        for name, dependency in depends_on.items():
            target = stack[name]
            if target.one_shot:
                assert dependency["condition"] == "service_completed_successfully", (service.name, name)
            else:
                assert dependency["condition"] == "service_healthy", (service.name, name)
                assert target.spec.get("healthcheck"), name
    for service in app_services(stack):
        if service.name not in ("migrate", "vllm"):
            assert "migrate" in service.spec["depends_on"], service.name


def test_only_the_web_and_s3_ports_are_published_and_on_loopback(stack):
    """The web node trusts X-Forwarded-Proto (BEHIND_TLS_PROXY): only the proxy on the
    host may reach it. PostgreSQL, Redis and vLLM stay inside the compose network."""
    published = {name: service.spec["ports"] for name, service in stack.items() if "ports" in service.spec}
    assert set(published) == {"web", "minio"}
    for name, ports in published.items():
        assert all(str(port).startswith("127.0.0.1:") for port in ports), name


def test_third_party_images_are_pinned(stack):
    for service in stack.values():
        if service.dockerfile is None:
            image = service.spec["image"]
            assert ":" in image, service.name
            assert not image.endswith(":latest"), service.name


def test_shell_scripts_are_valid_for_the_shell_that_runs_them(stack):
    """Inline scripts (a one-shot's `sh -c`) with `sh -n`, script files with `bash -n`."""
    scripts = [
        ("sh", service.argv[-1])
        for service in stack.values()
        if service.spec.get("entrypoint") in (["/bin/sh", "-ec"], ["/bin/sh", "-c"])
    ]
    scripts += [("bash", path.read_text()) for path in (REPO_ROOT / "docker").glob("*.sh")]
    assert scripts
    for shell, script in scripts:
        checked = subprocess.run([shell, "-n"], input=script, capture_output=True, text=True, check=False)
        assert checked.returncode == 0, checked.stderr


# --- The Dockerfiles ------------------------------------------------------------------------


def test_each_image_builds_from_files_that_are_in_the_build_context(stack):
    for service in app_services(stack):
        assert service.dockerfile is not None
        assert service.dockerfile.exists(), service.name
        assert service.spec["build"]["context"] == "..", service.name
        for stage in stage_chain(dockerfile_stages(service.dockerfile), service.build_target):
            for source in copy_sources(stage):
                assert (REPO_ROOT / source).exists(), f"{service.name}: COPY {source}"
                assert source == "." or not dockerignored(source), f"{service.name}: {source} is .dockerignored"


def test_the_build_context_holds_the_code_and_leaves_out_local_state():
    for kept in [*FIRST_PARTY, "manage.py", "requirements/base.txt", "requirements/gpu.txt"]:
        assert not dockerignored(kept), kept
    for dropped in [".git", ".venv", "var", "tests", "docker/.env", "projects/__pycache__/x.pyc"]:
        assert dockerignored(dropped), dropped


def test_every_images_default_command_is_one_the_test_suite_runs(stack):
    for dockerfile in sorted((REPO_ROOT / "docker").glob("*.Dockerfile")):
        for stage in dockerfile_stages(dockerfile):
            if stage.cmd:
                assert_command_is_one_the_suite_runs(stage.cmd, where=f"{dockerfile.name} {stage.name or ''}")
            assert stage.env_names - documented_variables() - RUNTIME_VARIABLES == set(), dockerfile.name
    for service in app_services(stack):
        assert service.dockerfile is not None
        stage = stage_chain(dockerfile_stages(service.dockerfile), service.build_target)[-1]
        if service.name not in ("migrate", "vllm"):  # the web and GPU images' other uses
            assert stage.cmd[:4] == service.argv[:4], service.name


def test_images_install_what_their_node_runs(stack):
    stages = {
        name: stage_chain(dockerfile_stages(service.dockerfile), service.build_target)
        for name, service in stack.items()
        if service.dockerfile is not None
    }

    def packages(name: str) -> set[str]:
        return set().union(*(stage.apt_packages for stage in stages[name]))

    def runs(name: str) -> str:
        return " ".join(run for stage in stages[name] for run in stage.arguments("RUN"))

    assert "poppler-utils" in packages("web") & packages("worker")  # normalize (inline, and on workers)
    assert "collectstatic" in runs("web")  # WhiteNoise serves what the build collected
    assert "-r requirements/prod.txt" in runs("web")
    assert "-r requirements/gpu.txt" in runs("vllm")
    assert "-r requirements/gpu.txt" in runs("gpu-worker")
    assert "vllm==" in (REPO_ROOT / "requirements" / "gpu.txt").read_text()
    fonts = pytest.importorskip("exports.renderers._pdf_fonts")
    assert set(fonts.FONT_PACKAGES) <= packages("worker")  # the PDF export renders on the CPU worker


# --- The production settings ----------------------------------------------------------------


def production_env(stack: Mapping[str, Service], name: str) -> dict[str, str]:
    """What the container's process sees: its image's ENV and the compose environment
    (no variable of this test run leaks in)."""
    service = stack[name]
    assert service.dockerfile is not None
    env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]), "HOME": str(Path.home())}
    for stage in stage_chain(dockerfile_stages(service.dockerfile), service.build_target):
        for argument in stage.arguments("ENV"):
            for variable, value in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=(\S+)", argument):
                if variable not in ("PATH", "VIRTUAL_ENV"):
                    env[variable] = value
    env.update(service.environment)
    return env


@pytest.mark.parametrize("name", ["web", "worker", "gpu-worker", "beat"])
def test_the_production_environment_passes_the_deploy_checks(stack, name):
    env = production_env(stack, name)
    assert env["DEBUG"] == "false"
    assert len(env["SECRET_KEY"]) >= 50
    checked = command_run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], env, timeout=120
    )
    output = checked.stdout + checked.stderr
    assert checked.returncode == 0, output
    assert "WARNINGS" not in output, output
    assert "ERRORS" not in output, output
    assert "System check identified no issues" in output, output


# --- The same commands, started here ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_the_web_command_serves_https_behind_the_proxy_and_answers_its_health_check(
    services: Services, variables, stack
):
    web = stack["web"]
    port = free_port()
    env = local_env(web, services.var_dir)
    started(services, "web", local_argv(web.argv, port=port), env)
    public_host = variables["PUBLIC_HOST"]
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30, headers={"Host": public_host})

    def meta_over_the_proxy() -> bool:
        try:
            return api.get("/v1/meta", headers={"X-Forwarded-Proto": "https"}).status_code == 200
        except httpx.TransportError:
            return False

    wait_until(meta_over_the_proxy, what="the web command", services=services)
    # Without the proxy's X-Forwarded-Proto the production settings send the client to HTTPS.
    plain = api.get("/v1/meta")
    assert (plain.status_code, plain.headers["location"]) == (301, f"https://{public_host}/v1/meta")
    assert "max-age=31536000" in api.get("/v1/meta", headers={"X-Forwarded-Proto": "https"}).headers.get(
        "strict-transport-security", ""
    )
    healthcheck = healthcheck_argv(web, port=port)
    assert_process_answers(healthcheck, env, what="the web health check", services=services)
    # Several uvicorn workers (WEB_WORKERS) share PROMETHEUS_MULTIPROC_DIR: whichever answers
    # the scrape reports every request, whichever worker served it.
    assert int(web.option("--workers") or 1) > 1
    metrics = {"Authorization": f"Bearer {variables['METRICS_TOKEN']}"}
    before = meta_requests(api.get("/metrics", headers=metrics).text)
    for _ in range(20):
        assert api.get("/v1/meta", headers={"X-Forwarded-Proto": "https"}).status_code == 200
    after = meta_requests(api.get("/metrics", headers=metrics).text)
    assert after - before == 20
    assert api.get("/metrics").status_code == 401


def meta_requests(text: str) -> float:
    """GET /v1/meta requests counted in a scrape of the web node's /metrics."""
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("bts_http_request_duration_seconds_count{") and 'route="v1/meta"' in line
    )


@pytest.mark.slow
@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", ["worker", "gpu-worker"])
def test_each_worker_command_starts_on_its_queues_and_answers_its_health_check(services: Services, stack, name):
    worker = stack[name]
    env = local_env(worker, services.var_dir)
    started(services, name, local_argv(worker.argv), env)
    output = assert_process_answers(healthcheck_argv(worker), env, what=f"{name}'s health check", services=services)
    node = node_of(worker.argv).replace("$HOSTNAME", env["HOSTNAME"])
    assert f"{node}: OK" in output
    assert "pong" in output
    assert httpx.get(f"http://127.0.0.1:{env['WORKER_METRICS_PORT']}/metrics", timeout=10).status_code == 200
    queues = celery_inspect("active_queues", node, env)
    assert set(re.findall(r"'name': '(\w+)'", queues)) == queues_of(worker.argv)


@pytest.mark.slow
@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_the_beat_command_keeps_its_schedule_file_fresh_for_its_health_check(services: Services, stack):
    beat = stack["beat"]
    env = local_env(beat, services.var_dir)
    started(services, "beat", local_argv(beat.argv), env)
    assert_process_answers(healthcheck_argv(beat), env, what="beat's health check", services=services)
