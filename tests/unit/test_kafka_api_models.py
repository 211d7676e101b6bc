"""The API layer's models against kio's schemas of every version served
(server/kafka_api/model.py): reading every request version and writing every response
version works without losing or inventing a field, and no model field is one no served
version has (a misspelling would be)."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from minikafka.protocol.kafka.codec import request_type, response_type
from minikafka.server.kafka_api.handler import FAMILIES, SERVED_VERSIONS
from minikafka.server.kafka_api.model import ModelMismatch, _model_of, _read_plan, _write_plan
from minikafka.server.kafka_api.registry import Route, routes


class _Anything:
    def __getattr__(self, name: str) -> None:
        return None


def _routes() -> list[Route]:
    out = []
    for family in FAMILIES:
        instance = family.__new__(family)  # the declarations only: no broker needed
        out.extend(routes(instance))
    return out


ROUTES = {route.spec.key: route for route in _routes()}
VERSIONS = [(key, v) for key, (low, high) in SERVED_VERSIONS.items() for v in range(low, high + 1)]
# Produce and Fetch responses are written by hand (tests/unit/test_kafka_produce_response.py
# and test_kafka_fetch_response.py test them).
MODELLED_RESPONSES = [(key, v) for key, v in VERSIONS if ROUTES[key].response_model is not None]


def test_every_served_api_has_one_route() -> None:
    assert sorted(ROUTES) == sorted(SERVED_VERSIONS)


def _pairs(model: type, entity: type) -> list[tuple[type, type]]:
    """(model, entity) for the root and every nested struct, matched by field."""
    out = [(model, entity)]
    model_hints = typing.get_type_hints(model)
    entity_hints = typing.get_type_hints(entity)
    for f in dataclasses.fields(entity):
        sub_entity = _model_of(entity_hints[f.name])
        if sub_entity is None or f.name not in model_hints:
            continue
        sub_model = _model_of(model_hints[f.name])
        assert sub_model is not None, f"{model.__qualname__}.{f.name} must be a model"
        out += _pairs(sub_model, sub_entity)
    return out


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
def test_request_models_read_every_version(api_key: int, version: int) -> None:
    route = ROUTES[api_key]
    for model, entity in _pairs(route.request_model, request_type(api_key, version)):
        _read_plan(model, entity)  # raises ModelMismatch


@pytest.mark.parametrize(("api_key", "version"), MODELLED_RESPONSES)
def test_response_models_write_every_version(api_key: int, version: int) -> None:
    route = ROUTES[api_key]
    assert route.response_model is not None
    for model, entity in _pairs(route.response_model, response_type(api_key, version)):
        _write_plan(entity, model)  # raises ModelMismatch


@pytest.mark.parametrize("api_key", sorted(SERVED_VERSIONS))
def test_every_model_field_is_a_field_of_a_served_version(api_key: int) -> None:
    route = ROUTES[api_key]
    low, high = SERVED_VERSIONS[api_key]
    sides = [(route.request_model, request_type)]
    if route.response_model is not None:
        sides.append((route.response_model, response_type))
    for root, schema in sides:
        seen: dict[type, set[str]] = {}
        for version in range(low, high + 1):
            for model, entity in _pairs(root, schema(api_key, version)):
                seen.setdefault(model, set()).update(f.name for f in dataclasses.fields(entity))
        for model, names in seen.items():
            unknown = {f.name for f in dataclasses.fields(model)} - names
            assert not unknown, f"{model.__qualname__}: {unknown} in no served version"


def test_a_model_lacking_a_request_field_is_refused() -> None:
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Heartbeat:
        group_id: str
        member_id: str

    with pytest.raises(ModelMismatch, match="generation_id"):
        _read_plan(Heartbeat, request_type(12, 4))


def test_a_model_lacking_a_required_response_field_is_refused() -> None:
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Heartbeat:
        throttle_time: int = 0

    with pytest.raises(ModelMismatch, match="error_code"):
        _write_plan(response_type(12, 4), Heartbeat)


def test_a_model_field_an_older_version_lacks_needs_a_default() -> None:
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Heartbeat:
        group_id: str
        generation_id: int
        member_id: str
        group_instance_id: str | None  # v3+, no default

    with pytest.raises(ModelMismatch, match="group_instance_id"):
        _read_plan(Heartbeat, request_type(12, 0))
