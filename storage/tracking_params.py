"""The loop run's params as MLflow takes them: its whole config, flattened."""

from __future__ import annotations

import json
from collections.abc import Mapping

MAX_PARAM_LENGTH = 500  # MLflow's param value limit on older servers (3.x accepts 6000)


def flat_params(tree: Mapping[str, object], prefix: str = "") -> dict[str, str]:
    """A nested mapping (``config.model_dump(mode="json")``) as MLflow params: dotted keys,
    strings as they are, other values as JSON, each cut to ``MAX_PARAM_LENGTH``."""
    flat: dict[str, str] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flat_params(value, f"{name}."))
            continue
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        flat[name] = text if len(text) <= MAX_PARAM_LENGTH else text[: MAX_PARAM_LENGTH - 3] + "..."
    return flat
