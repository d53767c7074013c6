"""The base of every config: unknown fields are errors, instances are immutable."""

from pydantic import BaseModel, ConfigDict


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
