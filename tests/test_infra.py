"""prefect.yaml and infra/: every Prefect deployment points at a real flow with a config
that validates, on a work pool that docker-compose runs a worker for, with defaults that
run on the embedded default (no store, Dask or S3 named in the parameters)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from flows import LOOPS
from schemas.configs import RunConfig

ROOT = Path(__file__).resolve().parents[1]
INFRA = ROOT / "infra"
PREFECT_YAML = yaml.safe_load((ROOT / "prefect.yaml").read_text())
DEPLOYMENTS = PREFECT_YAML["deployments"]


def served_pools() -> set[str]:
    services = yaml.safe_load((INFRA / "docker-compose.yml").read_text())["services"]
    commands = [str(s.get("command", "")) for s in services.values()]
    return {c.split("--pool", 1)[1].split()[0] for c in commands if "prefect worker start" in c}


@pytest.mark.parametrize("deployment", DEPLOYMENTS, ids=[d["name"] for d in DEPLOYMENTS])
def test_deployment_runs_a_loop_with_a_valid_config(deployment):
    path, function = deployment["entrypoint"].split(":")
    assert (INFRA.parent / path).is_file()
    config = RunConfig(**deployment["parameters"]["config"])
    assert LOOPS[config.loop].fn.__name__ == function and path == f"flows/{config.loop}.py"
    assert deployment["work_pool"]["name"] in served_pools()


def test_post_training_deployments_go_to_the_gpu_pool():
    for deployment in DEPLOYMENTS:
        if deployment["parameters"]["config"]["suite"] == "arith":
            assert deployment["work_pool"]["name"] == "ratchet-gpu", deployment["name"]


def test_deployments_run_on_the_embedded_default():
    assert "pull" not in PREFECT_YAML  # `prefect deploy` records the directory it runs in
    for deployment in DEPLOYMENTS:
        assert set(deployment["parameters"]) == {"config"}, deployment["name"]
        assert "dask_address" not in deployment["parameters"]["config"], deployment["name"]


def test_every_loop_that_carries_a_champion_is_scheduled_to_continue_from_it():
    from schemas.loops import STARTS_FROM_CHAMPION

    scheduled = {}
    for deployment in DEPLOYMENTS:
        config = RunConfig(**deployment["parameters"]["config"])
        scheduled.setdefault(config.loop, []).append(config.start_from)
    for loop in STARTS_FROM_CHAMPION:
        assert scheduled.get(loop) and set(scheduled[loop]) == {"champion"}, loop


def test_the_llm_service_serves_a_pinned_model_only_when_asked_for():
    from tasks.proposers.local_models import MODELS

    llm = yaml.safe_load((INFRA / "docker-compose.yml").read_text())["services"]["llm"]
    assert llm["profiles"] == ["llm"] and llm["ports"] == ["8000:8000"]
    assert llm["build"]["dockerfile"] == "infra/Dockerfile.llm"
    default = llm["build"]["args"]["MODEL"].split(":-")[1].rstrip("}")
    assert default == "qwen2.5-coder-0.5b" and default in MODELS
    recipe = (INFRA / "Dockerfile.llm").read_text()
    assert "'.[llm]'" in recipe and 'ratchet llm fetch "${MODEL}"' in recipe and "--host 0.0.0.0 --port 8000" in recipe


def test_compose_validates_and_routes_training_to_the_gpu_worker():
    services = yaml.safe_load((INFRA / "docker-compose.yml").read_text())["services"]
    assert "--resources GPU=1" in services["dask-worker-gpu"]["command"]
    for name in ("worker-cpu", "worker-gpu", "dask-worker-cpu", "dask-worker-gpu"):
        assert services[name]["environment"]["RATCHET_DASK_ADDRESS"] == "tcp://dask-scheduler:8786", name
        assert services[name]["environment"]["RATCHET_STORE"].startswith("s3://"), name
    assert "prefect.yaml" in (INFRA / "Dockerfile").read_text()  # the image deploys from /opt/ratchet
    compose = shutil.which("docker-compose")
    if compose is None:
        pytest.skip("no docker-compose client to validate the file with (CI installs one)")
    done = subprocess.run([compose, "-f", str(INFRA / "docker-compose.yml"), "config", "-q"], capture_output=True,
                          text=True, env={**os.environ, "MINIO_ROOT_PASSWORD": "test-only"})
    assert done.returncode == 0, done.stderr
