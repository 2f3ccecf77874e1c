"""Records behave as the frozen values the code relies on: built from their fields,
unchangeable, equal and hashed by their fields, shown by their fields (less the hidden ones),
copied with changes, and matched by position."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

from gateway.record import FrozenError, field, fields, is_record, record, replace


@record
class Point:
    x: int
    y: int
    label: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)
    secret: str = field(default="", repr=False)
    note: str = field(default="", compare=False)


@record
class Point3(Point):
    z: int = 0


def test_built_by_position_by_name_and_from_defaults() -> None:
    p = Point(1, y=2)
    assert (p.x, p.y, p.label, p.tags) == (1, 2, "", ())
    assert Point(1, 2, "a").label == "a"


def test_a_factory_makes_a_default_for_each_record() -> None:
    @record
    class Bag:
        items: list[int] = field(default_factory=list)

    assert Bag().items is not Bag().items
    assert Bag([1]).items == [1]


def test_every_field_by_position_is_the_record_given() -> None:
    made: list[int] = []

    @record
    class Counted:
        n: int
        items: tuple[int, ...] = field(default_factory=lambda: made.append(1) or ())

    given = (7,)
    whole = Counted(3, given)
    assert (whole.n, whole.items) == (3, given) and whole.items is given
    assert made == [], "no default is made for a field that was given"
    assert whole == Counted(n=3, items=(7,)) and hash(whole) == hash(Counted(3, (7,)))
    assert replace(whole, n=4) == Counted(4, (7,))
    with pytest.raises(FrozenError):
        whole.n = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((1,), {}, "missing 'y'"),
        ((1, 2, "a", (), "s", "n", "extra"), {}, "takes 6 arguments, not 7"),
        ((1, 2), {"colour": "red"}, "unexpected argument 'colour'"),
        ((1, 2), {"x": 3}, "more than one value for 'x'"),
        ((1,), {"colour": "red"}, "unexpected argument 'colour'"),
    ],
)
def test_wrong_arguments_are_refused_by_name(
    args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        Point(*args, **kwargs)


def test_assignment_and_deletion_raise() -> None:
    p = Point(1, 2)
    with pytest.raises(FrozenError):
        p.x = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del p.y
    assert p.x == 1


def test_equal_and_hashed_by_compared_fields_of_the_same_class() -> None:
    assert Point(1, 2, note="a") == Point(1, 2, note="b")
    assert hash(Point(1, 2, "a")) == hash(Point(1, 2, "a"))
    assert Point(1, 2) != Point(2, 1)
    assert Point3(1, 2) != Point(1, 2)
    assert len({Point(1, 2, "a"), Point(1, 2, "a"), Point(1, 3)}) == 2


def test_repr_shows_fields_except_hidden_ones() -> None:
    text = repr(Point(1, 2, "a", secret="sk-hidden"))
    assert text == "Point(x=1, y=2, label='a', tags=(), note='')"


def test_subclass_fields_follow_the_bases() -> None:
    p = Point3(1, 2, z=5)
    assert [f.name for f in fields(p)] == ["x", "y", "label", "tags", "secret", "note", "z"]
    assert repr(p).startswith("Point3(x=1, y=2,")


def test_replace_copies_with_changes() -> None:
    p = Point(1, 2, "a")
    q = replace(p, y=5)
    assert (q, p) == (Point(1, 5, "a"), Point(1, 2, "a"))
    with pytest.raises(TypeError, match="no field 'w'"):
        replace(p, w=1)


def test_match_by_position_and_is_record() -> None:
    match Point(1, 2):
        case Point(x, y):
            assert (x, y) == (1, 2)
    assert is_record(Point(1, 2)) and not is_record(Point) and not is_record((1, 2))


def test_copies_and_pickles_round_trip() -> None:
    p = Point(1, 2, "a", ("t",))
    assert copy.copy(p) == p and copy.deepcopy(p) == p
    assert pickle.loads(pickle.dumps(p)) == p


def test_a_field_without_a_default_after_one_is_refused() -> None:
    with pytest.raises(TypeError, match="without a default follows one"):

        @record
        class Bad:
            a: int = 0
            b: int  # type: ignore[misc]

    with pytest.raises(TypeError, match=r"gateway\.record\.field"):
        import dataclasses

        @record
        class Foreign:
            a: list[int] = dataclasses.field(default_factory=list)
