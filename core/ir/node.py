"""The base of every IR object: immutable, structurally hashed, structurally compared.

Each node class declares its fields once, in ``FIELDS``, as ``(name, kind)``
pairs. The kind says how generic machinery (hashing, equality, visiting,
mutating, printing) treats the field:

- ``"node"``:  a child IR node
- ``"opt"``:   a child IR node or ``None``
- ``"nodes"``: a tuple of child IR nodes
- ``"attr"``:  plain hashable data (a type, an operator, a name, a function)

The structural hash and the tree size (nodes counted at every occurrence of a
shared subtree) are computed once, at construction, from the children's cached
values, so they cost O(1) per node and never recurse. Each class gets a
constructor generated from its ``FIELDS`` (straight-line code: no loop over
the fields on the hot path of every pass), and so does its equality test.
``==`` is structural equality and ``hash()`` is the structural hash, so IR
objects are safe dict and set keys; IR is built with explicit builders
(``a.eq(b)``, ``a.lt(b)``) instead of overloaded comparisons. The generated code is
compiled once per installation (:mod:`kdd.core.generated_code`).
"""
from __future__ import annotations

import struct
from operator import attrgetter, is_
from typing import Any, ClassVar

from ..generated_code import compiled

FieldKinds = tuple[tuple[str, str], ...]


def _attr_key(value: Any) -> Any:
    """What identifies an attribute structurally: a float by its bit pattern.

    Python's ``==`` makes ``-0.0 == 0.0`` and ``nan != nan``; an immediate is a
    bit pattern, so ``-0.0`` and ``0.0`` are different IR (``1/x`` differs) and a
    NaN immediate equals itself (a node must equal itself to be a dict key).
    """
    if type(value) is float:
        return ("f64", struct.pack("<d", value))
    return value


def _children_getter(fields: FieldKinds):
    """A function returning a node's children for one class's ``FIELDS`` (the traversals' hot path:
    most classes have only ``node`` fields, read with one ``attrgetter``; the others get
    straight-line code)."""
    kinds = [kind for _, kind in fields if kind != "attr"]
    names = [name for name, kind in fields if kind != "attr"]
    if not kinds:
        return lambda node: ()
    if all(kind == "node" for kind in kinds):
        if len(names) == 1:
            get_one = attrgetter(names[0])
            return lambda node: (get_one(node),)
        return attrgetter(*names)
    if kinds == ["nodes"]:
        return attrgetter(names[0])  # already a tuple
    parts = [f"(n.{name},)" if kind == "node" else f"n.{name}" if kind == "nodes"
             else f"(() if n.{name} is None else (n.{name},))" for name, kind in zip(names, kinds)]
    namespace: dict = {}
    exec(compiled(f"def children(n):\n    return {' + '.join(parts)}\n"), namespace)  # noqa: S102 - from FIELDS
    return namespace["children"]


def _make_init(cls: type):
    """The constructor of one node class: stores the fields, checks that child fields hold
    nodes and computes the structural hash and the tree size from the children's."""
    fields = cls.FIELDS
    params = "".join(f"{name}, " for name, _ in fields)
    body = []
    hashed = ["_name"]
    sizes = ["1"]
    for name, kind in fields:
        if kind == "node":
            body.append(f"    if not isinstance({name}, Node): raise _not_node(self, {name!r}, {name})")
            hashed.append(f"{name}._hash")
            sizes.append(f"{name}._size")
        elif kind == "opt":
            hashed.append(f"(None if {name} is None else {name}._hash)")
            sizes.append(f"(0 if {name} is None else {name}._size)")
        elif kind == "nodes":
            hashed.append(f"tuple([v._hash for v in {name}])")
            sizes.append(f"sum([v._size for v in {name}])")
        else:
            hashed.append(f"({name} if _type({name}) is not float else _attr_key({name}))")
        body.append(f"    _set(self, {name!r}, {name})")
    source = (f"def __init__(self, {params}*, origin=None):\n" + "\n".join(body) + "\n"
              f"    _set(self, '_hash', hash(({', '.join(hashed)},)))\n"
              f"    _set(self, '_size', {' + '.join(sizes)})\n"
              # Where the node came from (a config span, a builder step); not part of identity.
              "    _set(self, 'origin', origin)\n")
    namespace = {"Node": Node, "_not_node": _not_node, "_set": object.__setattr__,
                 "_attr_key": _attr_key, "_type": type, "_name": cls.__name__}
    exec(compiled(source), namespace)  # noqa: S102 - source built above from the class's own FIELDS
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__name__}.__init__"
    return init


def _make_with_children(cls: type):
    """``with_children`` for a class whose child fields are all single nodes (most classes),
    as straight-line code; other classes keep the generic ``Node.with_children``."""
    kids = [name for name, kind in cls.FIELDS if kind != "attr"]
    if [kind for _, kind in cls.FIELDS if kind != "attr"] == ["nodes"]:  # a sequence, a call's arguments
        return _make_with_children_tuple(cls, kids[0])
    if not kids or any(kind in ("opt", "nodes") for _, kind in cls.FIELDS):
        return None
    values = ", ".join(name if kind == "node" else f"self.{name}" for name, kind in cls.FIELDS)
    source = (f"def with_children(self, new_children):\n"
              f"    {', '.join(kids)}, = new_children\n"
              f"    if {' and '.join(f'{k} is self.{k}' for k in kids)}:\n"
              f"        return self\n"
              f"    return self.rebuild({values})\n")
    namespace: dict = {}
    exec(compiled(source), namespace)  # noqa: S102 - source built above from the class's own FIELDS
    fn = namespace["with_children"]
    fn.__qualname__ = f"{cls.__name__}.with_children"
    fn.__doc__ = Node.with_children.__doc__
    return fn


def _make_with_children_tuple(cls: type, field: str):
    """``with_children`` for a class whose one child field is a tuple of nodes (``Seq``, ``FuncCall``), as
    straight-line code: the generic one steps through every field and child."""
    values = ", ".join("tuple(new_children)" if name == field else f"self.{name}" for name, _ in cls.FIELDS)
    source = (f"def with_children(self, new_children):\n"
              f"    old = self.{field}\n"
              f"    if len(new_children) == len(old) and all(map(_is, new_children, old)):\n"
              f"        return self\n"
              f"    return self.rebuild({values})\n")
    namespace: dict = {"_is": is_}
    exec(compiled(source), namespace)  # noqa: S102 - source built above from the class's own FIELDS
    fn = namespace["with_children"]
    fn.__qualname__ = f"{cls.__name__}.with_children"
    fn.__doc__ = Node.with_children.__doc__
    return fn


def _make_with_same_typed_children(cls: type):
    """``with_same_typed_children`` for one class, as straight-line code: the fields stored as they
    are, through the generated ``__init__`` alone (see ``Node.with_same_typed_children``)."""
    lines, values, same = [], [], []
    kinds = [kind for _, kind in cls.FIELDS if kind != "attr"]
    if kinds == ["nodes"]:  # a sequence, a call's arguments
        field = next(name for name, kind in cls.FIELDS if kind == "nodes")
        lines.append(f"    if len(new_children) == len(self.{field}) and all(map(_is, new_children, self.{field})):")
        lines.append("        return self")
        values = ["tuple(new_children)" if name == field else f"self.{name}" for name, _ in cls.FIELDS]
    else:
        lines.append("    it = iter(new_children)")
        for name, kind in cls.FIELDS:
            if kind == "node":
                lines.append(f"    {name} = next(it)")
            elif kind == "opt":
                lines.append(f"    {name} = None if self.{name} is None else next(it)")
            elif kind == "nodes":
                lines.append(f"    {name} = tuple([next(it) for _ in self.{name}])")
                lines.append(f"    if all(map(_is, {name}, self.{name})):")
                lines.append(f"        {name} = self.{name}")
            if kind != "attr":
                same.append(f"{name} is self.{name}")
            values.append(name if kind != "attr" else f"self.{name}")
        lines.append(f"    if {' and '.join(same)}:")
        lines.append("        return self")
    source = ("def with_same_typed_children(self, new_children):\n" + "\n".join(lines) + "\n"
              f"    return _cls({', '.join(values)}, origin=self.origin)\n")
    namespace: dict = {"_is": is_, "_cls": cls}
    exec(compiled(source), namespace)  # noqa: S102 - source built above from the class's own FIELDS
    fn = namespace["with_same_typed_children"]
    fn.__qualname__ = f"{cls.__name__}.with_same_typed_children"
    return fn


# Subtrees of up to this many nodes are walked by recursion (each level a Python call, no
# explicit stack, which is several times cheaper per node); larger ones through an explicit
# stack, so any depth works. Recursion is at most this deep.
SMALL_TREE = 64


def _make_equal(cls: type):
    """``_eq_small(a, b)`` and ``_eq_step(a, b, push)`` for two nodes of ``cls`` whose hashes are equal.

    Both compare the attributes (floats by their bit pattern, see ``_attr_key``) and check each
    pair of children that are not the same object for class and hash. ``_eq_small`` then compares
    those children by recursion (only called on subtrees of at most ``SMALL_TREE`` nodes);
    ``_eq_step`` does so for small children and hands larger ones to ``push`` for the caller's
    explicit-stack walk.
    """
    def child(x: str, y: str, pad: str, small: bool, opt: bool = False) -> list[str]:
        lines = [f"{pad}if {x} is not {y}:"]
        if opt:
            lines += [f"{pad}    if {x} is None or {y} is None: return False"]
        lines += [f"{pad}    if {x}.__class__ is not {y}.__class__ or {x}._hash != {y}._hash: return False"]
        if small:
            return lines + [f"{pad}    if not {x}._eq_small({x}, {y}): return False"]
        return lines + [f"{pad}    if {x}._size > {SMALL_TREE}: push(({x}, {y}))",
                        f"{pad}    elif not {x}._eq_small({x}, {y}): return False"]

    def body(small: bool) -> list[str]:
        lines = []
        for name, kind in cls.FIELDS:
            if kind == "attr":
                lines += [f"    x, y = a.{name}, b.{name}",
                          "    if x is not y and not ((x == y and x.__class__ is not float)"
                          " or _attr_key(x) == _attr_key(y)): return False"]
        for name, kind in cls.FIELDS:
            if kind in ("node", "opt"):
                lines += [f"    x, y = a.{name}, b.{name}", *child("x", "y", "    ", small, kind == "opt")]
            elif kind == "nodes":
                lines += [f"    xs, ys = a.{name}, b.{name}",
                          "    if len(xs) != len(ys): return False",
                          "    for x, y in zip(xs, ys):", *child("x", "y", "        ", small)]
        return lines + ["    return True"]

    source = ("def _eq_small(a, b):\n" + "\n".join(body(True)) + "\n\n"
              "def _eq_step(a, b, push):\n" + "\n".join(body(False)) + "\n")
    namespace = {"_attr_key": _attr_key}
    exec(compiled(source), namespace)  # noqa: S102 - source built above from the class's own FIELDS
    return namespace["_eq_small"], namespace["_eq_step"]


def _not_node(node, name: str, value: Any) -> TypeError:
    return TypeError(f"{type(node).__name__}.{name} must be an IR node, got {value!r}")


class Node:
    """Base of all IR nodes (expressions and statements)."""

    __slots__ = ("_hash", "_size", "origin", "__weakref__")
    FIELDS: ClassVar[FieldKinds] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"IR nodes are immutable ({type(self).__name__}.{name})")

    # -- identity ---------------------------------------------------------------------------
    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Node) and self._hash == other._hash and self.is_equal(other))

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __bool__(self) -> bool:
        # `if expr:` on IR is almost always a bug (a comparison builder was meant).
        raise TypeError("IR nodes have no truth value; use is_equal() or a comparison builder")

    def is_equal(self, other: "Node") -> bool:
        """Structural equality: recursion over small subtrees, an explicit stack above them (deep
        trees are fine). A pair of subtrees met again (a DAG) is compared once."""
        if self is other:
            return True
        if self.__class__ is not other.__class__ or self._hash != other._hash:
            return False
        if self._size <= SMALL_TREE:
            return self._eq_small(self, other)
        stack = [(self, other)]
        pop, push = stack.pop, stack.append
        seen: set[tuple[int, int]] = set()  # ids stay valid: both trees are alive throughout
        while stack:
            a, b = pop()
            key = (id(a), id(b))
            if key in seen:
                continue
            seen.add(key)
            if not a._eq_step(a, b, push):
                return False
        return True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._children_of = staticmethod(_children_getter(cls.FIELDS))
        cls.__init__ = _make_init(cls)
        small, step = _make_equal(cls)
        cls._eq_small, cls._eq_step = staticmethod(small), staticmethod(step)
        # Generated on first use, for this class itself (a subclass must not inherit its parent's).
        cls.with_same_typed_children = Node.with_same_typed_children
        if "with_children" not in cls.__dict__:
            fast = _make_with_children(cls)
            if fast is not None:
                cls.with_children = fast

    # -- generic structure ------------------------------------------------------------------
    def children(self) -> tuple["Node", ...]:
        """Child nodes in field order."""
        return self._children_of(self)

    def field_values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name, _ in self.FIELDS)

    def with_children(self, new_children: list["Node"]) -> "Node":
        """This node rebuilt over ``new_children`` (same order as ``children()``).

        Returns ``self`` when every child is the same object, so a mutation that
        changes nothing is visible as an identity check.
        """
        old_children = self._children_of(self)
        if len(new_children) == len(old_children) and all(map(is_, new_children, old_children)):
            return self  # the common case for mutators: checked at C speed
        it = iter(new_children)
        values = []
        changed = False
        for name, kind in self.FIELDS:
            old = getattr(self, name)
            if kind == "node":
                new = next(it)
            elif kind == "opt":
                new = None if old is None else next(it)
            elif kind == "nodes":
                new = tuple(next(it) for _ in old)
                if all(n is o for n, o in zip(new, old)):
                    new = old
            else:
                new = old
            changed |= new is not old
            values.append(new)
        if not changed:
            return self
        return self.rebuild(*values)

    def with_same_typed_children(self, new_children: list["Node"]) -> "Node":
        """``with_children`` for children each of the same type as the one it replaces (a copy with
        variables replaced by values of their types, operations folded to immediates of theirs).

        The node is stored as it is, without its validating constructor: that constructor's checks
        passed when this node was made and derive the same types from children of the same types.
        Generated for each class on its first use (few classes are ever copied this way).
        """
        fast = _make_with_same_typed_children(type(self))
        type(self).with_same_typed_children = fast
        return fast(self, new_children)

    def rebuild(self, *values: Any) -> "Node":
        """A node of the same class from new field values (through its validating constructor)."""
        return type(self).make(*values, origin=self.origin)

    @classmethod
    def make(cls, *values: Any, origin: Any = None) -> "Node":
        """The validating constructor; subclasses check their invariants here."""
        return cls(*values, origin=origin)

    def with_origin(self, origin: Any) -> "Node":
        """The same node tagged with where it came from (a config span, a builder step)."""
        node = type(self)(*self.field_values(), origin=origin)
        return node

    def __repr__(self) -> str:
        from .printer import to_text  # local import: printer depends on node classes
        return to_text(self)

    def __str__(self) -> str:
        return self.__repr__()

    def __reduce__(self):
        return (_rebuild_node, (type(self), self.field_values(), self.origin))


def _rebuild_node(cls, values, origin):
    return cls(*values, origin=origin)
