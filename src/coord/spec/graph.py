"""Dependency graphs: the one cycle search, for documents and for the board alike.

``coord spec lint`` names every knot of a document (``knots``), the board refuses an import
whose packages close a cycle (``coord.core.packages``) and a new dependency edge that would
close one (``coord.core.rules.dependency_path``). All three ask here. Pure: a graph is a
mapping from a node to the nodes it depends on, or a function that expands a whole frontier
at once (the board reads the dependencies of many items in one query).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

N = TypeVar("N", bound=Hashable)
# a frontier of nodes -> each one's successors (a node missing from the answer has none)
Expand = Callable[[list[N]], Mapping[N, Iterable[N]]]


@dataclass(slots=True)
class Knot(Generic[N]):
    """Nodes that depend on each other (a strongly connected component with a cycle)."""

    members: list[N]  # in the graph's order
    cycle: list[N]  # the shortest cycle through the first member: first → … → last (→ first)

    @property
    def closed(self) -> list[N]:
        """The cycle written to return to its start: ``[a, b, c, a]``."""
        return [*self.cycle, self.cycle[0]]


def knots(graph: Mapping[N, Sequence[N]]) -> list[Knot[N]]:
    """Every knot of ``graph``, ordered by their first member in the graph's order.

    Successors that are not keys of ``graph`` are ignored."""
    order = {node: index for index, node in enumerate(graph)}
    found = []
    for component in strongly_connected(graph):
        members = sorted(component, key=order.__getitem__)
        first = members[0]
        if len(members) == 1 and first not in graph[first]:
            continue  # a node alone, no edge to itself: no cycle
        inside = set(members)

        def expand(frontier: list[N], inside: set[N] = inside) -> dict[N, list[N]]:
            return {node: [s for s in graph[node] if s in inside] for node in frontier}

        cycle = shortest_cycle(first, expand)
        found.append(Knot(members, cycle if cycle is not None else [first]))
    return sorted(found, key=lambda knot: order[knot.members[0]])


def strongly_connected(graph: Mapping[N, Sequence[N]]) -> list[list[N]]:
    """Tarjan's algorithm without recursion (documents may chain thousands of packages)."""
    index: dict[N, int] = {}
    lowlink: dict[N, int] = {}
    on_stack: set[N] = set()
    stack: list[N] = []
    components: list[list[N]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, next_edge = work.pop()
            if next_edge == 0:
                index[node] = lowlink[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            edges = graph[node]
            while next_edge < len(edges) and edges[next_edge] not in graph:
                next_edge += 1  # an edge out of the graph
            if next_edge < len(edges):
                work.append((node, next_edge + 1))
                child = edges[next_edge]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    lowlink[node] = min(lowlink[node], index[child])
                continue
            if lowlink[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
            if work:
                parent = work[-1][0]
                lowlink[parent] = min(lowlink[parent], lowlink[node])
    return components


def shortest_path(start: N, goal: N, expand: Expand[N]) -> list[N] | None:
    """The shortest path ``start → … → goal`` (``[start]`` when they are the same node), or
    None when there is none."""
    if start == goal:
        return [start]
    return _breadth_first(start, goal, expand)


def shortest_cycle(start: N, expand: Expand[N]) -> list[N] | None:
    """The shortest cycle through ``start``: ``[start, …, last]`` where ``last → start``."""
    path = _breadth_first(start, start, expand)
    return path[:-1] if path is not None else None


def _breadth_first(start: N, goal: N, expand: Expand[N]) -> list[N] | None:
    """A path of at least one edge from ``start`` to ``goal``, the shortest (breadth first:
    the shortest reads best in a message, and the board expands a level in one query)."""
    parents: dict[N, N | None] = {start: None}
    frontier = [start]
    while frontier:
        following: list[N] = []
        for node, successors in expand(frontier).items():
            for child in successors:
                if child == goal:
                    path = [goal, node]
                    while (step := parents[path[-1]]) is not None:
                        path.append(step)
                    return path[::-1]
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    return None
