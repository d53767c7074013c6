"""The single place where a pydantic row model becomes an Arrow schema.

Type mapping (``Optional`` -> nullable, everything else not null):

    str -> string        int -> int64          float -> float64
    bool -> bool         datetime -> timestamp[us, UTC]
    list[str] -> list<string>     list[float] -> list<float64>
    dict[str, float] -> map<string, float64>
"""

from __future__ import annotations

import types
import typing
from datetime import datetime

import pyarrow as pa
from pydantic import BaseModel

_SCALARS: dict[type, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
    datetime: pa.timestamp("us", tz="UTC"),
}


def _unwrap_optional(annotation: typing.Any) -> tuple[typing.Any, bool]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"only Optional[X] unions map to Arrow, got {annotation!r}")
        return args[0], True
    return annotation, False


def arrow_type(annotation: typing.Any) -> pa.DataType:
    """Arrow type of one (non-optional) field annotation."""
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return pa.string()
    if origin is list:
        return pa.list_(arrow_type(args[0]))
    if origin is dict:
        return pa.map_(arrow_type(args[0]), arrow_type(args[1]))
    raise TypeError(f"no Arrow mapping for field type {annotation!r}")


def to_arrow_schema(model: type[BaseModel]) -> pa.Schema:
    """Arrow schema of a row model, fields in declaration order."""
    fields = []
    for name, info in model.model_fields.items():
        inner, nullable = _unwrap_optional(info.annotation)
        fields.append(pa.field(name, arrow_type(inner), nullable=nullable))
    return pa.schema(fields)


def rows_to_table(model: type[BaseModel], rows: typing.Sequence[BaseModel]) -> pa.Table:
    """Validated rows -> Arrow table with the model's exact schema."""
    schema = to_arrow_schema(model)
    for row in rows:
        if not isinstance(row, model):
            raise TypeError(f"expected {model.__name__} rows, got {type(row).__name__}")
    columns = {name: [getattr(r, name) for r in rows] for name in schema.names}
    for field in schema:
        if pa.types.is_map(field.type):
            columns[field.name] = [None if v is None else list(v.items()) for v in columns[field.name]]
    return pa.table(columns, schema=schema)


def table_to_rows(model: type[BaseModel], table: pa.Table) -> list[BaseModel]:
    """Arrow table -> validated rows (maps come back as dicts)."""
    schema = to_arrow_schema(model)
    map_fields = [f.name for f in schema if pa.types.is_map(f.type)]
    records = table.select(schema.names).to_pylist()
    for record in records:
        for name in map_fields:
            if record[name] is not None:
                record[name] = dict(record[name])
    return [model.model_validate(r) for r in records]
