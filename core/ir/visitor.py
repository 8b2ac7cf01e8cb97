"""Traversal and rewriting of IR, with explicit stacks (no recursion, any depth).

``IRVisitor`` walks a tree in pre-order, calling ``visit_<Class>(node)`` on the
way in (return ``False`` to skip the node's children) and ``leave_<Class>(node)``
on the way out, so visitors can keep scopes.

``IRMutator`` rebuilds a tree bottom-up. ``pre_<Class>(node)`` may return a
replacement and stop the descent; ``mutate_<Class>(old, new)`` receives the
node rebuilt over its mutated children (``new is old`` when no child changed)
and returns the result. Nodes are rebuilt only when a child changed, so an
unchanged tree comes back as the *same object*. A mutator with no hook for any
expression class returns expressions as they are without walking them (nothing
under an expression could change), so statement passes cost per statement.
"""
from __future__ import annotations

from typing import Callable, Container, Iterable, Iterator

from .expr import Expr, Var
from .node import Node
from .stmt import Alloc, For, Let, Seq, Stmt, trip_count

_BINDERS = frozenset({For, Let, Alloc})


def _class_hooks(tables: dict, cls: type, node_cls: type, prefixes: tuple[str, str]) -> tuple:
    """Class ``cls``'s hooks ``<prefix><Class>`` for node class ``node_cls``, each the nearest along
    its hierarchy (None where none is defined), looked up once per pair of classes into ``tables``."""
    table = tables.setdefault(cls, {})
    hooks = table.get(node_cls)
    if hooks is None:
        hooks = table[node_cls] = tuple(
            next((getattr(cls, f"{prefix}{k.__name__}") for k in node_cls.__mro__
                  if hasattr(cls, f"{prefix}{k.__name__}")), None) for prefix in prefixes)
    return hooks


# What a visitor's stack frame does with its node: walk into it, call its leave hook, or open and close
# the scope a binder (for, let, alloc) gives its body.
_ENTER, _LEAVE, _OPEN, _CLOSE = range(4)


class IRVisitor:
    """Pre/post-order visitor; subclasses define ``visit_<Class>`` / ``leave_<Class>`` hooks.

    Hooks are looked up along the class hierarchy, so ``visit_Expr`` sees every expression.
    ``statements_only = True`` walks statements alone (a statement's expressions are its
    own to read in its hook), the cost of statement analyses.

    The context of the node a hook receives, kept by the walk (the hand-written walks it
    replaces each threaded their own):

    - ``loops``: the enclosing ``for`` statements, outermost first (a loop's bounds are
      outside it, its body inside);
    - ``times``: how many times the node runs per run of the root, the product of
      :meth:`trips` over ``loops``; ``exact``: whether every enclosing loop's count is known;
    - ``scope``: the variables bound where the node sits, each to its ``let``, ``for`` or
      ``alloc`` (a binder's variable is in scope in its body only).
    """

    statements_only = False

    loops: list
    times: int
    exact: bool
    scope: dict

    def trips(self, loop) -> int | None:
        """The context hook of ``times``: the iterations ``loop`` counts for (None: unknown, counted
        as 1 and making ``times`` inexact). Default: its trip count where its bounds are constants."""
        return trip_count(loop)

    @classmethod
    def _hooks(cls, node_cls: type) -> tuple[Callable | None, Callable | None]:
        """The ``visit_`` and ``leave_`` hooks (plain functions) of this visitor class for node class ``node_cls``."""
        return _class_hooks(_VISIT_HOOKS, cls, node_cls, ("visit_", "leave_"))

    def visit(self, root: Node) -> None:
        mine = type(self)
        table = _VISIT_HOOKS.setdefault(mine, {})
        self.loops, self.times, self.exact, self.scope = [], 1, True, {}
        outer: list[tuple] = []  # (times, exact, variable, the binding it shadowed) of each open scope
        only_stmts = self.statements_only
        stack: list[tuple[Node, int]] = [(root, _ENTER)]
        pop, push, extend = stack.pop, stack.append, stack.extend
        while stack:
            node, action = pop()
            cls = node.__class__
            if action is _ENTER:
                enter, leave = table.get(cls) or mine._hooks(cls)
                if enter is not None and enter(self, node) is False:
                    continue
                if leave is not None:
                    push((node, _LEAVE))
                kids = (node._stmts_of(node) if isinstance(node, Stmt) else ()) if only_stmts else node._children_of(node)
                if cls in _BINDERS:  # the body (the last child) walks inside the binder's scope
                    push((node, _CLOSE))
                    push((kids[-1], _ENTER))
                    push((node, _OPEN))
                    kids = kids[:-1]
                if kids:
                    extend([(k, _ENTER) for k in reversed(kids)])
            elif action is _LEAVE:
                table[cls][1](self, node)
            elif action is _OPEN:
                var = node.buf if cls is Alloc else node.var
                outer.append((self.times, self.exact, var, self.scope.get(var)))
                self.scope[var] = node
                if cls is For:
                    self.loops.append(node)
                    trips = self.trips(node)
                    if trips is None:
                        self.exact = False
                    else:
                        self.times *= trips
            else:
                self.times, self.exact, var, shadowed = outer.pop()
                if shadowed is None:
                    del self.scope[var]
                else:
                    self.scope[var] = shadowed
                if cls is For:
                    self.loops.pop()


class IRMutator:
    """Bottom-up rewriter; see the module docstring.

    ``memoize`` (default True) reuses the result for a subtree object met again
    (IR is often a DAG). Mutators whose result depends on the enclosing scope
    set it to False.
    """

    memoize = True

    @classmethod
    def _unvisited(cls) -> frozenset:
        """The node classes this mutator class returns as they are without walking them: every
        expression class when it has no hook for any (nothing under an expression can then
        change: statement passes skip all expressions), else none."""
        found = _UNVISITED.get(cls)
        if found is None:
            stack, classes = [Expr], []
            while stack:
                k = stack.pop()
                classes.append(k)
                stack.extend(k.__subclasses__())
            found = _UNVISITED[cls] = (frozenset(classes) if not any(
                hook is not None for k in classes for hook in cls._hooks(k)) else frozenset())
        return found

    @classmethod
    def _hooks(cls, node_cls: type) -> tuple[Callable | None, Callable | None]:
        """The ``pre_`` and ``mutate_`` hooks (plain functions, called with the mutator first)
        of this mutator class for node class ``node_cls``."""
        return _class_hooks(_HOOKS, cls, node_cls, ("pre_", "mutate_"))

    def mutate(self, root: Node) -> Node:
        mine = type(self)
        hooks = _HOOKS.setdefault(mine, {})
        memoize = self.memoize
        as_is = mine._unvisited()
        memo: dict[int, Node] = {}
        out: list[Node] = []
        # Frames: (node, sink, None) on the way in; (node, sink, child results) on the way out.
        stack: list[tuple] = [(root, out, None)]
        pop, push = stack.pop, stack.append
        while stack:
            node, sink, results = pop()
            cls = node.__class__
            if cls in as_is:
                sink.append(node)
                continue
            pre, post = hooks.get(cls) or mine._hooks(cls)
            if results is None:
                if memoize:
                    hit = memo.get(id(node))
                    if hit is not None:
                        sink.append(hit)
                        continue
                if pre is not None:
                    replaced = pre(self, node)
                    if replaced is not None:
                        sink.append(replaced)
                        continue
                kids = node._children_of(node)
                if kids:
                    results = []
                    push((node, sink, results))
                    for k in reversed(kids):
                        push((k, results, None))
                    continue
                new = node  # a leaf: nothing to rebuild
            else:
                new = node.with_children(results)
            result = new if post is None else post(self, node, new)
            if memoize:
                memo[id(node)] = result
            sink.append(result)
        return out[0]


# visitor class -> node class -> its visit_ and leave_ hooks (None where it has none)
_VISIT_HOOKS: dict[type, dict[type, tuple[Callable | None, Callable | None]]] = {}
# mutator class -> node class -> its pre_ and mutate_ hooks (None where it has none)
_HOOKS: dict[type, dict[type, tuple[Callable | None, Callable | None]]] = {}
# mutator class -> the node classes it returns without walking them (see IRMutator._unvisited)
_UNVISITED: dict[type, frozenset] = {}


def walk(root: Node) -> Iterator[Node]:
    """Every node of the tree in pre-order (shared subtrees are yielded once per occurrence)."""
    stack = [root]
    pop, extend = stack.pop, stack.extend
    while stack:
        node = pop()
        yield node
        extend(reversed(node._children_of(node)))


def post_order(root: Node, children: Callable[[Node], Iterable[Node]] | None = None,
               done: Container[int] = ()) -> Iterator[Node]:
    """Every distinct node object under ``root`` (by identity), each after its children; iterative.

    The bottom-up analyses (evaluation, linear forms, value ranges) compute a
    node's value from its children's: they store it under ``id(node)`` in a
    memo as each node is yielded, and pass that memo as ``done`` so nodes
    already computed, in this walk or an earlier one, are not walked again.
    ``children`` chooses the dependencies (default: ``node.children()``).
    """
    kids_of = children
    if id(root) in done:
        return
    kids = root._children_of(root) if kids_of is None else kids_of(root)
    for k in kids:
        if id(k) not in done:
            break
    else:  # the common case: only the root is new
        yield root
        return
    emitted: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    pop, push = stack.pop, stack.append
    while stack:
        node, ready = pop()
        key = id(node)
        if key in emitted or key in done:
            continue
        if ready:
            emitted.add(key)
            yield node
            continue
        push((node, True))
        # A list, not a generator: nothing to resume per child (the walk under every analysis).
        stack += [(k, False) for k in (node._children_of(node) if kids_of is None else kids_of(node))
                  if id(k) not in done]


def statements(root: Stmt, enter: Callable[[Stmt], bool] | None = None) -> list[Stmt]:
    """The statements of ``root`` (itself included) in program order, each object once; the children of
    a statement for which ``enter`` is false are left out."""
    walk = _Statements(enter)
    walk.visit(root)
    return walk.found


class _Statements(IRVisitor):
    statements_only = True

    def __init__(self, enter: Callable[[Stmt], bool] | None):
        self.enter = enter
        self.found: list[Stmt] = []
        self.seen: set[int] = set()

    def visit_Stmt(self, s: Stmt) -> bool:
        if id(s) in self.seen:
            return False
        self.seen.add(id(s))
        self.found.append(s)
        return self.enter is None or self.enter(s)


def count_nodes(root: Node) -> int:
    """Number of nodes in the tree, counting shared subtrees at every occurrence (cached at
    construction, so O(1))."""
    return root._size


class Substitute(IRMutator):
    """Replaces every occurrence of the expressions in ``mapping`` (structural match)."""

    def __init__(self, mapping: dict):
        self.mapping = mapping

    def pre_Node(self, node):
        return self.mapping.get(node)


def substitute(root: Node, mapping: dict) -> Node:
    """``root`` with each key of ``mapping`` replaced by its value (same object if none occur)."""
    return Substitute(mapping).mutate(root) if mapping else root


def free_vars(root: Node) -> set:
    """Variables used but not bound (by let, for or alloc) inside ``root``."""
    bound: dict = {}
    free: set = set()
    # Events: ("node", n) visits n; ("bind"/"unbind", v) opens and closes a scope.
    stack: list[tuple[str, Node]] = [("node", root)]
    while stack:
        event, node = stack.pop()
        if event == "bind":
            bound[node] = bound.get(node, 0) + 1
        elif event == "unbind":
            bound[node] -= 1
        elif isinstance(node, Var):
            if not bound.get(node):
                free.add(node)
        elif isinstance(node, (Let, For, Alloc)):
            var = node.buf if isinstance(node, Alloc) else node.var
            stack += [("unbind", var), ("node", node.body), ("bind", var)]
            outside = [] if isinstance(node, Alloc) else (
                [node.value] if isinstance(node, Let) else [node.init, node.bound])
            stack += [("node", e) for e in reversed(outside)]
        else:
            kids = list(node.children())
            kids.reverse()
            stack += [("node", k) for k in kids]
    return free


def distinct_nodes(*roots: Node) -> Iterator[Node]:
    """Every node object reachable from ``roots``, each once (pre-order of first visits, the roots in
    order): an unrolled body's statements share most of their subtrees."""
    seen: set[int] = set()
    stack = list(reversed(roots))
    pop, mark = stack.pop, seen.add
    while stack:
        node = pop()
        if id(node) in seen:
            continue
        mark(id(node))
        yield node
        stack += reversed(node._children_of(node))  # a child seen by now is skipped when popped


def var_names(*roots: Node) -> set[str]:
    """Names of every variable (bound or free, buffers included) under ``roots``.

    One walk with a stack of its own: passes ask it of every statement after unrolling, where resuming
    :func:`distinct_nodes`' generator per node cost more than the walk."""
    names: set[str] = set()
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            if isinstance(node, Var):
                names.add(node.name)
            stack += node._children_of(node)
    return names
