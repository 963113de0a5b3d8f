"""Where each actor stands: a trie of generator positions, keyed by answers.

A protocol generator cannot be copied or hashed, but it is deterministic: what
it yields next depends only on the answers it was given so far. So an actor's
position *is* the sequence of its answers, and the explorer names it by one
small integer, a node of this trie (a node is the position reached from its
parent by one answer). Each node remembers the operation the generator yields
there, or how the generator ended (returned, or raised).

Stepping a node with an answer for the first time needs a live generator at
that node. The trie keeps the one it last advanced there (a generator is used
once: the first child taken from a node gets it) and otherwise rebuilds one by
replaying the answers from the root. Every later visit of the same (node,
answer) pair costs a dictionary look-up: many global states share the same
actor positions, so most steps of a search never touch a generator at all.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Hashable
from dataclasses import dataclass
from typing import Any

__all__ = ["Answer", "Ended", "Program", "Trie"]

Steps = Generator[Any, Any, Any]


@dataclass(frozen=True, slots=True)
class Program:
    """One run an actor may make: a name (part of the state) and its generator."""

    name: str
    start: Callable[[], Steps]


@dataclass(frozen=True, slots=True)
class Answer:
    """What an operation is answered with: a value sent, or an exception thrown.

    ``key`` identifies the answer in the trie (exceptions are keyed by class
    and text: a fresh instance is thrown each time, so that no traceback is
    shared between generators).
    """

    key: Hashable
    value: Any = None
    throw: type[BaseException] | None = None
    text: str = ""

    def exception(self) -> BaseException:
        assert self.throw is not None
        return self.throw(self.text)


@dataclass(frozen=True, slots=True)
class Ended:
    """How a run ended: its return value, or what it raised."""

    value: Any = None
    error: BaseException | None = None


class _Node:
    __slots__ = ("answer", "children", "gen", "op", "parent", "program", "until")

    def __init__(self, program: Program, parent: int, answer: Answer | None) -> None:
        self.program = program
        self.parent = parent
        self.answer = answer
        self.op: Any = None
        self.until: Ended | None = None
        self.gen: Steps | None = None
        self.children: dict[Hashable, int] = {}


class Trie:
    """Positions of protocol generators; see the module docstring."""

    def __init__(self) -> None:
        self._nodes: list[_Node] = []
        self._roots: dict[str, int] = {}
        self.replays = 0
        self.sends = 0

    def __len__(self) -> int:
        return len(self._nodes)

    def root(self, program: Program) -> int:
        """The position of a fresh run of ``program`` (before its first operation)."""
        found = self._roots.get(program.name)
        if found is not None:
            return found
        node = _Node(program, -1, None)
        gen = program.start()
        self._advance(node, gen, None)
        self._nodes.append(node)
        nid = len(self._nodes) - 1
        self._roots[program.name] = nid
        return nid

    def op(self, nid: int) -> Any:
        """The operation the generator yields at ``nid`` (``None`` when it ended)."""
        return self._nodes[nid].op

    def ended(self, nid: int) -> Ended | None:
        return self._nodes[nid].until

    def program(self, nid: int) -> Program:
        return self._nodes[nid].program

    def step(self, nid: int, answer: Answer) -> int:
        """The position after answering the operation at ``nid`` with ``answer``."""
        node = self._nodes[nid]
        child = node.children.get(answer.key)
        if child is not None:
            return child
        gen = node.gen
        node.gen = None
        if gen is None:
            gen = self._replay(nid)
        new = _Node(node.program, nid, answer)
        self._advance(new, gen, answer)
        self._nodes.append(new)
        cid = len(self._nodes) - 1
        node.children[answer.key] = cid
        return cid

    def answers(self, nid: int) -> list[Answer]:
        """The answers that lead from the root to ``nid``, in order."""
        out: list[Answer] = []
        node = self._nodes[nid]
        while node.answer is not None:
            out.append(node.answer)
            node = self._nodes[node.parent]
        out.reverse()
        return out

    def _replay(self, nid: int) -> Steps:
        self.replays += 1
        node = self._nodes[nid]
        gen = node.program.start()
        next(gen)
        for answer in self.answers(nid):
            self.sends += 1
            if answer.throw is not None:
                gen.throw(answer.exception())
            else:
                gen.send(answer.value)
        return gen

    def _advance(self, node: _Node, gen: Steps, answer: Answer | None) -> None:
        self.sends += 1
        try:
            if answer is None:
                node.op = next(gen)
            elif answer.throw is not None:
                node.op = gen.throw(answer.exception())
            else:
                node.op = gen.send(answer.value)
        except StopIteration as stop:
            node.until = Ended(value=stop.value)
            return
        except Exception as exc:  # the run ended with an error: part of its position
            exc.__traceback__ = None
            node.until = Ended(error=exc)
            return
        node.gen = gen
