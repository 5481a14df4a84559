"""Deterministic JSON valid against a JSON Schema (harnessweb/engine/shapes.py), checked with a real validator
(``jsonschema``), and the validator's own report of where a value goes wrong."""

from __future__ import annotations

import enum
from typing import Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

from harnessweb.engine.shapes import instance, normalized, problem


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str
    zip: str = Field(min_length=5, max_length=5)


class Person(BaseModel):
    name: str
    age: int = Field(ge=18, le=99)
    score: float = Field(gt=0, lt=1)
    tags: list[str] = Field(min_length=2, max_length=4)
    color: Color
    kind: Literal["a", "b"]
    address: Address
    previous: list[Address] | None = None
    email: str = Field(json_schema_extra={"format": "email"})


SCHEMAS: list[dict[str, Any]] = [
    Person.model_json_schema(),
    {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"], "additionalProperties": False},
    {"type": "OBJECT", "properties": {"n": {"type": "INTEGER", "minimum": 3}}, "required": ["n"]},  # Gemini
    {"type": "array", "items": {"type": "number", "multipleOf": 0.5, "minimum": 1, "maximum": 3}, "minItems": 3},
    {"type": ["string", "null"], "format": "date-time"},
    {"anyOf": [{"type": "null"}, {"type": "integer", "exclusiveMinimum": 5, "exclusiveMaximum": 9}]},
    {"allOf": [{"properties": {"a": {"type": "boolean"}}, "required": ["a"]}, {"properties": {"b": {"const": 7}}}]},
    {"type": "object", "properties": {"when": {"type": "string", "format": "date"}, "id": {"format": "uuid"}}},
    {"type": "object", "properties": {"tree": {"$ref": "#/$defs/node"}}, "required": ["tree"],
     "$defs": {"node": {"type": "object", "properties": {"label": {"type": "string", "maxLength": 4}}}}},
    {},
]  # fmt: skip


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_it_gives_json_valid_against_the_schema(schema: dict[str, Any]) -> None:
    value = instance(schema, "seed")
    jsonschema.validate(value, normalized(schema))
    assert problem(value, schema) == ""


def test_it_gives_the_same_value_for_the_same_seed_and_another_for_another() -> None:
    schema = Person.model_json_schema()
    assert instance(schema, "a") == instance(schema, "a")
    assert instance(schema, "a") != instance(schema, "b")


def test_it_fills_every_required_field_and_nested_objects() -> None:
    value = instance(Person.model_json_schema(), "x")
    assert set(value) >= {"name", "age", "score", "tags", "color", "kind", "address", "email"}
    assert len(value["address"]["zip"]) == 5 and 18 <= value["age"] <= 99 and value["email"] == "user@example.com"


def test_it_says_where_a_value_goes_wrong() -> None:
    schema = Person.model_json_schema()
    wrong = {**instance(schema, "x"), "address": {"street": "x", "zip": 12345}}
    assert problem(wrong, schema) == "at $.address.zip: 12345 is not of type 'string'"
    assert problem({"q": 1}, SCHEMAS[1]) == "at $.q: 1 is not of type 'string'"
    assert "required property" in problem({}, SCHEMAS[1])
