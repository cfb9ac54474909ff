"""YAML in: the documents of a user's file, within budgets, every map key once.

What ``trainweave.files`` (the CLI's files) and the controller's runtime snapshot read. A
YAML text becomes Python values as PyYAML's safe loader makes them, with four checks a plain
``yaml.safe_load_all`` lacks, each refused as one ``InputError`` naming the line:

- a map key given twice: kubectl refuses it (sigs.k8s.io/yaml ``YAMLToJSONStrict``: "key
  already set in map") where PyYAML silently keeps the last;
- nesting deeper than ``MAX_DEPTH`` (aliases expanded): the pure-Python composer would end in a
  ``RecursionError``, and no Kubernetes object needs a hundred levels;
- aliases that would add more than ``MAX_ALIAS_NODES`` nodes once expanded (a "billion laughs"
  bomb: nine anchors of nine aliases each is 387 million nodes, each copied by every later
  pass), and an alias inside its own anchor (a recursive value);
- a text longer than ``MAX_BYTES`` (checked by the caller that reads the file,
  ``trainweave.files``; the API server takes a request body of 3 MiB at most).

The checks run on the composed node graph, before anything is constructed: aliases there are
shared nodes, so sizes and depths are counted once per node (linear in the file, however many
nodes the aliases would expand to). libyaml's ``CSafeLoader`` is used when PyYAML has it (a
hundred times faster than the pure-Python ``SafeLoader``; libyaml itself refuses nesting past
1000 levels), else ``SafeLoader``, whose composer gets a depth guard so the budget is checked
before Python's recursion limit is reached. Pure: no file or environment access.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from trainweave.errors import InputError, InputErrors
from trainweave.labels import Reason

MAX_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 100
MAX_ALIAS_NODES = 100_000

_MERGE = "tag:yaml.org,2002:merge"
_STR = "tag:yaml.org,2002:str"
_KEY_WORDS = {True: "true", False: "false"}


class _DepthGuard(yaml.SafeLoader):
    """The pure-Python loader, refusing nesting past MAX_DEPTH while it composes (its composer
    recurses: left alone, 500 levels end in a RecursionError)."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise _Refused(mark.line, _too_deep())
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


LOADER: type[yaml.SafeLoader] | Any = getattr(yaml, "CSafeLoader", None) or _DepthGuard


class _Refused(Exception):
    def __init__(self, line: int, reason: str) -> None:
        self.line, self.reason = line, reason


def _too_deep() -> str:
    return f"nested more than {MAX_DEPTH} levels deep (aliases expanded): refused"


def key_name(key: object) -> str | None:
    """A map key as kubectl sends it in JSON (``1:`` is ``"1"``, ``true:`` is ``"true"``), or
    None for a key JSON has no name for (sigs.k8s.io/yaml@v1.6.0 ``convertToJSONableObject``)."""
    if isinstance(key, bool):
        return _KEY_WORDS[key]
    if isinstance(key, str | int | float):
        return str(key)
    return None


def load_all(text: str, source: str, loader: Any = None) -> list[Any]:
    """The values of every YAML document in ``text`` (empty documents as None).

    Raises InputErrors (one line, naming ``source`` and the line) for invalid YAML, a key
    given twice, or a budget exceeded. ``loader``: a PyYAML safe loader class (default
    ``LOADER``: libyaml's when present).
    """
    cls = loader or LOADER
    if cls is yaml.SafeLoader:
        cls = _DepthGuard
    parser = cls(text)
    try:
        out = []
        while parser.check_node():
            node = parser.get_node()
            if node is not None:
                _check(node, parser)
            out.append(parser.construct_document(node))
        return out
    except _Refused as exc:
        raise InputErrors([InputError(f"line {exc.line + 1}", exc.reason, source)]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "(document)"
        # the problem and its column, on one line (str(exc) adds the context and a snippet)
        problem = getattr(exc, "problem", None) or str(exc)
        column = f" (column {mark.column + 1})" if mark is not None else ""
        raise InputErrors([InputError(where, f"invalid YAML: {problem}{column}", source)]) from None
    finally:
        parser.dispose()


def load_error(exc: InputErrors, where: str) -> InputErrors:
    """``exc`` as the controller reports a YAML problem of a field (``where``)."""
    return InputErrors(
        InputError(where, f"{e.path}: {e.message}", e.source, Reason.INVALID_RUNTIME)
        for e in exc.errors
    )


def _children(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        yield from node.value
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key
            yield value


def _check(root: yaml.Node, parser: Any) -> None:
    """Refuse a key given twice, nesting past MAX_DEPTH, a recursive alias, and aliases that
    would expand past MAX_ALIAS_NODES.

    One pre-order walk over the collections; only a document in which a collection is reached
    twice (an alias of it) takes the second walk that counts expanded sizes.
    """
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    shared = False
    while stack:
        node, level = stack.pop()
        if id(node) in seen:
            shared = True
            continue
        seen.add(id(node))
        if level > MAX_DEPTH:
            raise _Refused(node.start_mark.line, _too_deep())
        if isinstance(node, yaml.MappingNode):
            _unique_keys(node, parser)
        stack.extend((k, level + 1) for k in _children(node) if not isinstance(k, yaml.ScalarNode))
    if shared:
        _expanded(root)


def _expanded(root: yaml.Node) -> None:
    """The sizes and depths of a document with aliases, each distinct collection counted once
    (post-order, memoized): an alias inside its own anchor, nesting past MAX_DEPTH once aliases
    are expanded, or more than MAX_ALIAS_NODES added by them, is refused."""
    size: dict[int, int] = {}  # id(node) -> nodes once expanded
    depth: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        ident = id(node)
        kids = [k for k in _children(node) if not isinstance(k, yaml.ScalarNode)]
        if done:
            size[ident] = 1 + sum(size[id(k)] for k in kids)
            depth[ident] = 1 + max((depth[id(k)] for k in kids), default=0)
            open_.discard(ident)
            if depth[ident] > MAX_DEPTH:
                raise _Refused(node.start_mark.line, _too_deep())
            continue
        if ident in size:
            continue
        if ident in open_:
            raise _Refused(node.start_mark.line, "an alias inside its own anchor: refused")
        open_.add(ident)
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in size)
    extra = size[id(root)] - len(size)
    if extra > MAX_ALIAS_NODES:
        raise _Refused(
            root.start_mark.line,
            f"aliases expand this document by {extra} collections, more than"
            f" {MAX_ALIAS_NODES}: refused (an alias bomb?)",
        )


def _unique_keys(node: yaml.MappingNode, parser: Any) -> None:
    plain = {k.value for k, _ in node.value if k.tag == _STR}
    if len(plain) == len(node.value):
        return  # string keys, each once (the common case, checked at C speed)
    seen: dict[str, int] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE:
            continue  # a complex key is refused later; "<<" merges
        name = key.value if key.tag == _STR else key_name(parser.construct_object(key))
        if name is None:
            continue
        if name in seen:
            raise _Refused(
                key.start_mark.line,
                f"duplicate key {name!r} (first on line {seen[name] + 1}): kubectl refuses a"
                " map with a key twice",
            )
        seen[name] = key.start_mark.line
