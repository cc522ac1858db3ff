"""Gang placement with any policy: a gang's parts placed one by one, each by the policy (the one gang rule).

A *gang* is a task of ``workers > 1`` identical parts (:class:`~fgdopt.model.Task`), each on one node, placed all
together or not at all (:meth:`~fgdopt.state.ClusterState.place_parts`). A policy places one task; a gang is
placed **part by part**: the policy is asked for the first part on the current state, that part is held there
(:meth:`~fgdopt.state.ClusterState.hold`), the policy is asked for the second part on the state with the first one
held, and so on. Every hold is given back before :func:`choose_parts` returns, so the state is as it was; the caller
places the chosen parts at once. This is the natural fit of the policy interface (``policy(state, task)``), and it
makes every policy a gang policy with no code of its own: FGD puts each part where it raises the fragmentation
least given the earlier parts (a greedy, not the best joint placement of the whole gang; scoring whole gangs would
weigh ``n_nodes ** workers`` joint choices), best-fit packs each part tightest, and so on.

The parts fit together iff :meth:`~fgdopt.state.ClusterState.parts_fit` (exact for identical parts: each part
placed lowers its node's part count by one). So when it holds, a policy that returns a choice wherever the task fits
places every part; :func:`choose_parts` checks it first and returns ``None`` at once when the gang does not fit. A
policy may also leave a part unallocated where it fits (``None``, as the policy protocol allows for any task: the
flawed views ``per-gpu-dimension`` and ``unified-device`` do); the gang is then left unallocated, as a task would be.
A policy that keeps some nodes from a job where it would fit (:class:`fgdopt.policies.reserve.Reserving`) refuses
the whole gang at its first part (the gang waits, as a job that fits nowhere).
"""

from __future__ import annotations

from collections.abc import Callable

from fgdopt.model import Task
from fgdopt.state import ClusterState

Parts = tuple[tuple[int, tuple[int, ...]], ...]
"""Where a gang goes: ``((node, gpus), ...)``, one entry per worker."""


def choose_parts(ask: Callable[[ClusterState, Task], tuple | None], state: ClusterState, task: Task) -> Parts | None:
    """The parts of gang ``task`` chosen one by one by ``ask(state, part)`` (module docstring), or ``None`` when the
    gang does not fit now or ``ask`` leaves one of its parts unallocated. ``state`` is left as it was (its
    ``revision`` advanced by the holds and releases).

    Raises
    ------
    fgdopt.state.InfeasiblePlacement : ``ask`` chose a node or GPUs where the part does not fit.
    """
    if not state.parts_fit(task):
        return None
    part = task.part
    held: list[tuple[int, tuple[int, ...]]] = []
    try:
        for _ in range(task.workers):
            choice = ask(state, part)
            if choice is None:  # the policy leaves this part unallocated: so is the gang
                return None
            node, gpus = int(choice[0]), tuple(int(g) for g in choice[1])
            state.hold(part, node, gpus)
            held.append((node, gpus))
        return tuple(held)
    finally:
        for node, gpus in reversed(held):
            state.release(part, node, gpus)
