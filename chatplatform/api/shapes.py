"""Output serializers declared once: the declared fields are the OpenAPI schema and the answer.

`OutputSerializer` renders an object from its declared fields (name, `source`, field class) through
a function generated once per class, so a page of a thousand records costs what a hand-written
dict would (docs/decisions.md, "Output serializers"), and the schema cannot drift from the answer.

What a shape leaves out is declared beside the fields:
- `OMIT_WHEN_NULL`: keys absent (not null) when unset; they are optional in the schema too;
- `BLANK_AS_NULL`: keys whose empty string is null on the wire;
- `OMIT_UNLESS_CONTEXT`: key → context flag; the key is left out when the flag is false (default true).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

from django.db.models.manager import BaseManager
from rest_framework import serializers


def iso(value: datetime) -> str:
    """A stored time on the wire: ISO 8601 in UTC with `Z`, microseconds kept (tokens rely on them)."""
    if value.tzinfo is not UTC:  # what the database gives back is UTC already
        value = value.astimezone(UTC)
    return value.isoformat().replace("+00:00", "Z")


def _items(value: Any) -> Iterable[Any]:
    return value.all() if isinstance(value, BaseManager) else value


# Field classes whose representation of a stored Python value is the value itself (DRF's would copy,
# coerce a str to str, or walk a dict to return an equal one).
_AS_IS: tuple[type[serializers.Field], ...] = (
    serializers.CharField,
    serializers.ChoiceField,
    serializers.BooleanField,
    serializers.IntegerField,
    serializers.JSONField,
    serializers.DictField,
    serializers.ListField,
)


Renderer = Callable[["OutputSerializer", Any], dict[str, Any]]


class OutputSerializer(serializers.Serializer):
    """A serializer whose answer is its declared fields, rendered by a generated function.

    Subclasses declare fields (`source=` for the model attribute) and, for keys computed from several
    attributes, `SerializerMethodField`s. Override `to_representation` only to post-process what
    `super().to_representation` returns, never to list the keys again.
    """

    OMIT_WHEN_NULL: ClassVar[tuple[str, ...]] = ()
    BLANK_AS_NULL: ClassVar[tuple[str, ...]] = ()
    OMIT_UNLESS_CONTEXT: ClassVar[dict[str, str]] = {}
    OPTIONAL_IN_RESPONSES: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The schema (chatplatform.api.autoschema) reads OPTIONAL_IN_RESPONSES: keys that may be absent.
        optional = (*cls.OPTIONAL_IN_RESPONSES, *cls.OMIT_WHEN_NULL, *cls.OMIT_UNLESS_CONTEXT)
        cls.OPTIONAL_IN_RESPONSES = tuple(dict.fromkeys(optional))

    def to_representation(self, instance: Any) -> dict[str, Any]:
        if isinstance(instance, Mapping):
            # Validated data (`.data` after is_valid without an instance) is keyed, not attributed: DRF's way.
            return dict(super().to_representation(instance))
        render = type(self).__dict__.get("_render")
        if render is None:
            render = _compile(type(self))
        return render(self, instance)


def _compile(cls: type[OutputSerializer]) -> Renderer:
    """The class's renderer: one function that reads each source attribute and builds the dict, as a
    dict literal for the keys that are always there and a statement for each key that may be left out."""
    fields = cls().fields
    namespace: dict[str, Any] = {"_iso": iso, "_items": _items}
    body: list[str] = []
    run: list[tuple[str, str]] = []  # (key, expression) not yet written
    started = False
    uses_context = False

    def flush() -> None:
        nonlocal started
        literal = "{" + ", ".join(f"{key!r}: {expression}" for key, expression in run) + "}"
        if not started:
            body.append(f"    out = {literal}")
        elif len(run) == 1:
            body.append(f"    out[{run[0][0]!r}] = {run[0][1]}")
        elif run:
            body.append(f"    out.update({literal})")
        started = True
        run.clear()

    for index, (name, field) in enumerate(fields.items()):
        if field.write_only:
            continue
        if isinstance(field, serializers.SerializerMethodField):
            read = f"self.{field.method_name}(obj)"
        else:
            source = field.source or name
            if source == "*":
                raise TypeError(f"{cls.__name__}.{name}: source='*' is not supported by OutputSerializer")
            read = f"obj.{source}"
        convert = _converter(cls, name, field, namespace, index)
        value = f"v{index}"
        expression = f"({convert.format(value)} if ({value} := {read}) is not None else None)" if convert else read
        if name in cls.BLANK_AS_NULL:
            expression = f"({expression} or None)"
        if name not in cls.OMIT_UNLESS_CONTEXT and name not in cls.OMIT_WHEN_NULL:
            run.append((name, expression))
            continue
        flush()
        indent = "    "
        if name in cls.OMIT_UNLESS_CONTEXT:
            uses_context = True
            body.append(f"    if context.get({cls.OMIT_UNLESS_CONTEXT[name]!r}, True):")
            indent = "        "
        if name in cls.OMIT_WHEN_NULL:
            body.append(f"{indent}if (w{index} := {expression}) is not None:")
            body.append(f"{indent}    out[{name!r}] = w{index}")
        else:
            body.append(f"{indent}out[{name!r}] = {expression}")
    flush()
    lines = ["def _render(self, obj):", *(["    context = self.context"] if uses_context else []), *body, "    return out"]
    exec(compile("\n".join(lines), f"<{cls.__module__}.{cls.__qualname__} renderer>", "exec"), namespace)
    render: Renderer = namespace["_render"]
    cls._render = render  # type: ignore[attr-defined]
    return render


def _converter(cls: type[OutputSerializer], name: str, field: serializers.Field, namespace: dict[str, Any], index: int) -> str:
    """The expression (with `{}` for the value) turning a non-null attribute into its wire form; "" for as is."""
    if isinstance(field, serializers.SerializerMethodField):
        return ""
    if isinstance(field, serializers.DateTimeField):
        return "_iso({})"
    if isinstance(field, serializers.UUIDField):
        return "str({})"
    if isinstance(field, serializers.ListSerializer) and isinstance(field.child, OutputSerializer):
        # A fresh child per answer so that it sees this answer's context.
        namespace[f"_child{index}"] = type(field.child)
        return f"[_child{index}(context=self.context).to_representation(item) for item in _items({{}})]"
    if isinstance(field, OutputSerializer):
        namespace[f"_child{index}"] = type(field)
        return f"_child{index}(context=self.context).to_representation({{}})"
    if isinstance(field, serializers.FloatField):
        return "float({})"
    if type(field).to_representation is serializers.Field.to_representation:
        raise TypeError(f"{cls.__name__}.{name}: {type(field).__name__} has no representation")
    if isinstance(field, _AS_IS) and type(field).to_representation in {c.to_representation for c in _AS_IS}:
        return ""
    if isinstance(field, serializers.Serializer | serializers.ListSerializer):
        raise TypeError(f"{cls.__name__}.{name}: nest an OutputSerializer")
    # Any other field renders itself; it must not depend on the context (it is bound once per class).
    namespace[f"_field{index}"] = field
    return f"_field{index}.to_representation({{}})"
