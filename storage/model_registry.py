"""A run's champions in MLflow's model registry, synced from its ``registry`` table.

Each registry name ("circle_packing/evolve") is a registered model. MLflow refuses '/'
and ':' in model names, so both become '.' (``model_name``: "circle_packing.evolve")
and the model keeps the original in its ``ratchet.registry_name`` tag. Each registry
row holding the ``champion`` alias is one model version, tagged with the row
(``VERSION_TAGS``); a sync finds the versions it made by their ``run_id`` and
``decision_id`` tags, so syncing again (a retried stage, a resumed run) adds nothing.
A version's source is the artifact folder of the candidate's nested MLflow run. The
``champion`` alias points at the latest champion: the highest registry version of the
run whose last champion was registered last.

``MlflowTracker.publish_registry`` (storage/tracking.py) drives this module: it picks the
rows (``champion_rows``), brings each candidate's nested run up to date (scores as
metrics, ``champion_artifacts`` as its artifact), then calls ``publish_versions``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby

from mlflow import MlflowClient
from mlflow.entities.model_registry import ModelVersion
from mlflow.exceptions import MlflowException

from schemas.rows import CandidateRow, RegistryRow
from storage.store import TableStore

CHAMPION_ALIAS = "champion"
NAME_TAG = "ratchet.registry_name"
VERSION_TAGS = ("run_id", "candidate_id", "decision_id", "registry_version", "stage", "event_at")
"""Every version's tags, plus ``select_score`` and ``holdout_score`` where the row has one."""
MAX_ARTIFACT_BYTES = 16 * 2**20
"""A larger blob (a big checkpoint) is not copied: its nested run gets ``artifact_uri.txt``."""
ARTIFACT_NAMES = {"program": "candidate.py", "rules": "harness.py", "weights": "checkpoint.pt",
                  "config": "candidate.json"}
POINTER_NAME = "artifact_uri.txt"


def model_name(registry_name: str) -> str:
    """The registered model's name: the registry name with '/' and ':' as '.'."""
    return registry_name.replace("/", ".").replace(":", ".")


def champion_rows(store: TableStore, run_id: str) -> list[RegistryRow]:
    """The run's registry rows holding the champion alias, by name, then version."""
    rows = [r for r in store.read_rows("registry", run_id) if r.alias == CHAMPION_ALIAS]
    return sorted(rows, key=lambda r: (r.name, r.version))


def champion_metrics(row: RegistryRow) -> dict[str, float]:
    scores = {"select_score": row.select_score, "holdout_score": row.holdout_score}
    return {key: value for key, value in scores.items() if value is not None}


def version_tags(row: RegistryRow) -> dict[str, str]:
    tags = {"run_id": row.run_id, "candidate_id": row.candidate_id, "decision_id": row.decision_id,
            "registry_version": str(row.version), "stage": row.stage,
            "event_at": row.event_at.isoformat(timespec="microseconds")}
    return tags | {key: str(value) for key, value in champion_metrics(row).items()}


def champion_artifacts(store: TableStore, run_id: str, rows: Sequence[RegistryRow]) -> dict[str, tuple[bytes, str]]:
    """Each champion's artifact and file name: its blob (named by the candidate's kind),
    else (no blob, or one past MAX_ARTIFACT_BYTES) a text file holding its URI.
    A candidate with neither is left out."""
    wanted = {r.candidate_id for r in rows}
    candidates = {c.candidate_id: c for c in store.read_rows("candidates", run_id) if c.candidate_id in wanted}
    found = {}
    for candidate_id in sorted(wanted):
        artifact = _artifact(store, candidate_id, candidates.get(candidate_id))
        if artifact is not None:
            found[candidate_id] = artifact
    return found


def _artifact(store: TableStore, candidate_id: str, row: CandidateRow | None) -> tuple[bytes, str] | None:
    if store.has_blob(candidate_id):
        data = store.get_blob(candidate_id)
        if len(data) <= MAX_ARTIFACT_BYTES:
            return data, ARTIFACT_NAMES.get(row.artifact_kind if row else "", "candidate.bin")
        uri = store.blob_uri(candidate_id)
    elif row is not None and row.artifact_uri:
        uri = row.artifact_uri
    else:
        return None
    return f"{uri}\n".encode(), POINTER_NAME


@dataclass(frozen=True)
class _Version:
    """What the alias needs to know of a model version Ratchet made."""

    version: str
    run_id: str
    registry_version: int
    event_at: datetime

    @classmethod
    def of(cls, version: ModelVersion, tags: Mapping[str, str]) -> _Version:
        return cls(str(version.version), tags["run_id"], int(tags["registry_version"]),
                   datetime.fromisoformat(tags["event_at"]))


def publish_versions(client: MlflowClient, rows: Sequence[RegistryRow], sources: Mapping[str, tuple[str, str]]) -> int:
    """Create the model versions that ``rows`` (champion rows) lack, in version order, and
    move each model's champion alias; ``sources``: candidate id -> (nested MLflow run
    id, its artifact URI). Returns how many versions were created."""
    created = 0
    for registry_name, group in groupby(sorted(rows, key=lambda r: (r.name, r.version)), key=lambda r: r.name):
        name = _registered_model(client, registry_name)
        versions = _ratchet_versions(client, name)
        for row in group:
            if (row.run_id, row.decision_id) in versions:
                continue
            run_id, source = sources[row.candidate_id]
            tags = version_tags(row)
            made = client.create_model_version(name, source, run_id=run_id, tags=tags)
            versions[(row.run_id, row.decision_id)] = _Version.of(made, tags)
            created += 1
        _point_champion(client, name, list(versions.values()))
    return created


def _registered_model(client: MlflowClient, registry_name: str) -> str:
    """The registry name's model, created on first use; a model of that name made for
    another registry name (one that maps to the same name) is refused."""
    name = model_name(registry_name)
    try:
        model = client.get_registered_model(name)
    except MlflowException as exc:
        if exc.error_code != "RESOURCE_DOES_NOT_EXIST":
            raise
        try:
            client.create_registered_model(name, tags={NAME_TAG: registry_name},
                                           description=f"Ratchet champions of {registry_name}")
            return name
        except MlflowException as again:  # another process created it since the look-up
            if again.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
            model = client.get_registered_model(name)
    if model.tags.get(NAME_TAG, registry_name) != registry_name:
        raise ValueError(f"registered model {name!r} holds registry name {model.tags[NAME_TAG]!r}, "
                         f"not {registry_name!r}: both map to the same MLflow model name")
    return name


def _ratchet_versions(client: MlflowClient, name: str) -> dict[tuple[str, str], _Version]:
    """The model's versions that a sync made, by (run_id, decision_id) tag."""
    return {(v.tags["run_id"], v.tags["decision_id"]): _Version.of(v, v.tags)
            for v in _search_versions(client, name) if all(tag in v.tags for tag in VERSION_TAGS)}


def _search_versions(client: MlflowClient, name: str) -> Iterator[ModelVersion]:
    token = None
    while True:
        page = client.search_model_versions(f"name = '{name}'", max_results=1000, page_token=token)
        yield from page
        token = page.token
        if not token:
            return


def _point_champion(client: MlflowClient, name: str, versions: Sequence[_Version]) -> None:
    """Alias champion -> the highest registry version of the run that registered last."""
    if not versions:
        return
    last: dict[str, datetime] = {}
    for v in versions:
        last[v.run_id] = max(last.get(v.run_id, v.event_at), v.event_at)
    latest = max(versions, key=lambda v: (last[v.run_id], v.run_id, v.registry_version))
    if str(client.get_registered_model(name).aliases.get(CHAMPION_ALIAS)) != latest.version:
        client.set_registered_model_alias(name, CHAMPION_ALIAS, latest.version)
