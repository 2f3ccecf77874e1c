"""Records: frozen values whose classes cost next to nothing to define.

`@record` makes a class of annotated fields a value: a constructor taking the fields in
order (positionally or by name, defaults last), assignment and deletion refused
(`FrozenError`), equality and hash over the compared fields (a record equals only one of
its own class), a repr naming each shown field, and `match` by position. `field()` sets a
default factory or leaves a field out of the repr (a secret's fingerprint) or out of
equality; `replace()` and `fields()` do what `dataclasses`' do.

Why not `dataclasses`: a frozen dataclass compiles each of its generated methods with its
own `exec` when its class is defined, several million instructions a class, and a plain
question defines dozens of record classes before it asks anything (bench/RESULTS.md, "Start-up
at the first wave's"). Here the methods are the same few functions for every record,
reading the field names the decorator stored on the class; defining a record is a loop
over its annotations. `typing.dataclass_transform` tells type checkers the decorator
makes dataclass-like classes, so mypy still checks every constructor call, field type and
attempted assignment.

The records keep their `__dict__` (no `__slots__`): a slotted class has to be rebuilt
after its body has run, which costs a second class and breaks zero-argument `super()`
in its methods.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform

R = TypeVar("R")
T = TypeVar("T")


class FrozenError(AttributeError):
    """An assignment to (or deletion of) a record's attribute: records are values."""


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # a field without a default


class Field:
    """One field of a record, as `fields()` lists them."""

    __slots__ = ("compare", "default", "default_factory", "metadata", "name", "repr", "type")

    def __init__(
        self,
        default: Any = MISSING,
        default_factory: Callable[[], Any] | None = None,
        repr: bool = True,
        compare: bool = True,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        if default is not MISSING and default_factory is not None:
            raise ValueError("a field takes a default or a default factory, not both")
        self.name = ""
        self.type: Any = None  # the annotation (a string under postponed annotations)
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare
        self.metadata: Mapping[str, Any] = {} if metadata is None else metadata

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r})"


def field(
    *,
    default: Any = MISSING,
    default_factory: Callable[[], Any] | None = None,
    repr: bool = True,
    compare: bool = True,
    metadata: Mapping[str, Any] | None = None,
) -> Any:
    """A field's default (or a factory called for each record), whether the record's repr
    shows it and its equality and hash count it, and what else its users keep on it."""
    return Field(default, default_factory, repr, compare, metadata)


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def record(cls: type[T]) -> type[T]:
    """Make `cls` a frozen value of its annotated fields (see the module's docstring)."""
    own = vars(cls)
    found: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for f in vars(base).get("__record_fields__", ()):
            found[f.name] = f
    # Not inspect.get_annotations: importing inspect is what a plain question avoids.
    for name, annotation in own.get("__annotations__", {}).items():
        if _is_classvar(annotation):
            continue
        value = own.get(name, MISSING)
        if type(value).__module__ == "dataclasses":
            raise TypeError(f"{cls.__qualname__}.{name}: a record's field is gateway.record.field")
        f = value if isinstance(value, Field) else Field(value)
        f.name = name
        f.type = annotation
        found[name] = f
        if f.default is not MISSING:
            setattr(cls, name, f.default)
        elif name in own:
            delattr(cls, name)
    for method in ("__init__", "__setattr__", "__delattr__"):
        if method in own:
            raise TypeError(f"record {cls.__qualname__} defines {method}: a record is its fields")
    every = tuple(found.values())
    later = [f.default is not MISSING or f.default_factory is not None for f in every]
    if later != sorted(later):
        raise TypeError(f"record {cls.__qualname__}: a field without a default follows one")
    names = tuple(f.name for f in every)
    compared = tuple(f.name for f in every if f.compare)
    made: dict[str, object] = {
        "__record_fields__": every,
        "__record_names__": names,
        "__record_name_set__": frozenset(names),
        "__record_size__": len(names),
        "__record_shown__": tuple(f.name for f in every if f.repr),
        "__record_key__": attrgetter(*compared) if compared else _nothing,
        # the defaults, over which a constructor lays its arguments
        "__record_template__": {
            f.name: f.default if f.default_factory is None else _Factory(f.default_factory)
            for f, has_default in zip(every, later, strict=True)
            if has_default
        },
        "__record_factories__": tuple(f.name for f in every if f.default_factory is not None),
        "__match_args__": names,
        "__init__": _init,
        "__setattr__": _setattr,
        "__delattr__": _delattr,
    }
    if "__repr__" not in own:
        made["__repr__"] = _repr
    if "__eq__" not in own:
        made["__eq__"] = _eq
    if own.get("__hash__") is None:  # none, or set to None by an own __eq__
        made["__hash__"] = _hash
    for name, value in made.items():
        setattr(cls, name, value)
    return cls


class _Factory:
    """A field's default factory, in the template of a record's values."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    # One function for every record (no code compiled per class), kept to C-level dict
    # work on the common path: the class's defaults, the arguments laid over them, all
    # straight into the new record's own dict (no dict built and copied per record).
    cls = type(self)
    values = self.__dict__
    if not kwargs and len(args) == cls.__record_size__:
        # Every field by position: no default to lay first, no factory, nothing to check
        # (a zip of two tuples of one length pairs each name with its value).
        values.update(zip(cls.__record_names__, args))  # noqa: B905
        return
    values.update(cls.__record_template__)
    if args:
        names = cls.__record_names__
        if len(args) > len(names):
            _refuse(cls, args, kwargs)
        # No `strict=`: a keyword makes zip parse a dict of them, per record (about 1.5 k
        # instructions); fewer arguments than names is the common case, more is refused above.
        values.update(zip(names, args))  # noqa: B905
    if kwargs:
        values.update(kwargs)
        if not kwargs.keys() <= cls.__record_name_set__ or (
            args and not kwargs.keys().isdisjoint(cls.__record_names__[: len(args)])
        ):
            _refuse(cls, args, kwargs)
    if len(values) != cls.__record_size__:
        _refuse(cls, args, kwargs)
    for name in cls.__record_factories__:
        made = values[name]
        if type(made) is _Factory:
            values[name] = made.make()


def _refuse(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    names: tuple[str, ...] = cls.__record_names__  # type: ignore[attr-defined]
    if len(args) > len(names):
        raise TypeError(f"{cls.__qualname__}() takes {len(names)} arguments, not {len(args)}")
    for name in kwargs:
        if name not in names:
            raise TypeError(f"{cls.__qualname__}() got an unexpected argument {name!r}")
        if name in names[: len(args)]:
            raise TypeError(f"{cls.__qualname__}() got more than one value for {name!r}")
    given = {*names[: len(args)], *kwargs, *cls.__record_template__}  # type: ignore[attr-defined]
    missing = [n for n in names if n not in given]
    raise TypeError(f"{cls.__qualname__}() is missing {', '.join(map(repr, missing))}")


def _setattr(self: Any, name: str, value: object) -> None:
    raise FrozenError(f"cannot assign to field {name!r} of a {type(self).__qualname__}")


def _delattr(self: Any, name: str) -> None:
    raise FrozenError(f"cannot delete field {name!r} of a {type(self).__qualname__}")


def _repr(self: Any) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in type(self).__record_shown__)
    return f"{type(self).__qualname__}({shown})"


def _nothing(value: object) -> tuple[()]:
    return ()


def _eq(self: Any, other: object) -> Any:
    key = self.__record_key__
    if other.__class__ is self.__class__:
        return key(self) == key(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__record_key__(self))


def is_record(value: object) -> bool:
    """Whether `value` is a record (an instance, not a record class)."""
    return not isinstance(value, type) and hasattr(type(value), "__record_fields__")


def fields(value: object) -> tuple[Field, ...]:
    """A record's (or record class's) fields, in the constructor's order."""
    cls = value if isinstance(value, type) else type(value)
    try:
        return cls.__record_fields__  # type: ignore[attr-defined, no-any-return]
    except AttributeError:
        raise TypeError(f"{cls.__qualname__} is not a record") from None


def replace(value: R, /, **changes: Any) -> R:
    """A copy of the record `value` with `changes` to its fields."""
    cls = type(value)
    names = fields(cls)
    current = value.__dict__
    made = {f.name: changes.pop(f.name) if f.name in changes else current[f.name] for f in names}
    if changes:
        raise TypeError(f"{cls.__qualname__} has no field {next(iter(changes))!r}")
    copy = object.__new__(cls)
    copy.__dict__.update(made)
    return copy
