"""A name the published schema allows is a name the gateway takes: one whitespace class everywhere.

The gateway validates with pydantic (Rust's regex), the schema is read by clients and fuzzers in
ECMAScript's or Python's dialect. Each dialect's `\\s` is another set, so `api.schemas.text.SPACE` spells
its characters out; this checks, for every code point of the first planes, that pydantic and Python's
`re` agree on a name pattern built from it, and that the spelt-out class is Python's `\\s` plus U+FEFF.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re

from pydantic import BaseModel, Field, ValidationError

import api.schemas
from api.schemas.text import SPACE

NAME_PATTERN = f"^[^/*{SPACE}][^/*]*$"


class _Named(BaseModel):
    name: str = Field(pattern=NAME_PATTERN)


def _taken(value: str) -> bool:
    try:
        _Named(name=value)
    except ValidationError:
        return False
    return True


def test_the_class_is_pythons_whitespace_and_the_byte_order_mark() -> None:
    spelt_out = re.compile(f"[{SPACE}]")
    python_space = re.compile(r"[\s\ufeff]")
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        assert bool(spelt_out.fullmatch(char)) == bool(python_space.fullmatch(char)), hex(code)


def test_pydantic_and_the_published_pattern_agree_on_every_first_character() -> None:
    published = re.compile(NAME_PATTERN)
    disagreements = [
        hex(code)
        for code in range(0x3100)
        if not 0xD800 <= code <= 0xDFFF
        and _taken(chr(code) + "x") != bool(published.fullmatch(chr(code) + "x"))
    ]
    assert disagreements == []
    # the shapes the fuzz test once sent: a form feed and an information separator first are refused
    assert not _taken("\x0c9")
    assert not _taken("\x1cproject")
    assert _taken("project-9")


def test_every_constrained_field_publishes_its_pattern() -> None:
    """A field the gateway checks against a pattern says so in its schema, optional ones included."""
    missing: list[str] = []
    for module_info in pkgutil.iter_modules(api.schemas.__path__):
        module = importlib.import_module(f"api.schemas.{module_info.name}")
        for name, model in vars(module).items():
            if not inspect.isclass(model) or not issubclass(model, BaseModel):
                continue
            if model.__module__ != module.__name__:
                continue
            properties = model.model_json_schema(by_alias=True).get("properties", {})
            for field_name, field in model.model_fields.items():
                checked = [item for item in field.metadata if getattr(item, "pattern", None)]
                published = json.dumps(properties.get(field.alias or field_name, {}))
                if checked and '"pattern"' not in published:
                    missing.append(f"{module.__name__}.{name}.{field_name}")
    assert missing == []
