"""infra/: every Prefect deployment points at a real flow with a config that validates,
on a work pool that docker-compose runs a worker for."""

from pathlib import Path

import pytest
import yaml

from flows import LOOPS
from schemas.configs import RunConfig

INFRA = Path(__file__).resolve().parents[1] / "infra"
DEPLOYMENTS = yaml.safe_load((INFRA / "prefect.yaml").read_text())["deployments"]


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
