"""Splits: how a task placed in several parts is cut, the one thing specific to each form of multi-part placement.

:class:`~fgdopt.state.ClusterState` places every task as a tuple of parts ``((node, gpus), ...)`` (a task on one
node: one part), each holding ``(cpu_milli, memory_mib)`` on its node and ``gpu_milli`` on each of its GPUs, and
takes, gives back and judges every part by one code path (the one rule, :meth:`~fgdopt.state.ClusterState.check`,
on the state with the earlier parts placed). What differs between forms is the *split* of the task's demand over its
parts, which this module holds:

- :data:`SPAN` (every task of ``workers == 1``): one part, or a whole-GPU task over several distinct nodes of one GPU
  model, ``num_gpu`` GPUs summed over its parts, its CPU and memory on the first part (capability form ``"span"``).
  Its placement counts one step of ``revision`` (``last_node``: the first part's node).
- :data:`WORKERS` (a *gang*, ``workers > 1``): ``workers`` identical parts, each the task's
  :attr:`~fgdopt.model.Task.part` (its CPU, memory and ``num_gpu x gpu_milli``), nodes may repeat (form
  ``"workers"``). Its placement counts one step per part (``last_node``: the last part's node).

A capability refuses a form by :meth:`~fgdopt.capabilities.Capability.allows` (MIG refuses both multi-part forms, an
elastic task refuses ``"workers"``). Like :mod:`fgdopt.capabilities`, this module sits below the state and reads it
through the ``state`` argument (not annotated: it does not import the state).
"""

from __future__ import annotations

from fgdopt.model import GPU_MILLI, Task


class Split:
    """How a task is cut into parts (module docstring).

    Attributes
    ----------
    form : the capability form (:data:`fgdopt.capabilities.FORMS`) of a placement in several parts.
    each_part_revises : whether a placement or removal advances ``revision`` by one per part (``last_node``: the
        last part's node), or by one in all (``last_node``: the first part's node).
    """

    form: str
    each_part_revises: bool

    def held(self, cpu_milli: int, memory_mib: int, n_parts: int) -> tuple[tuple[int, int], ...]:
        """The ``(cpu_milli, memory_mib)`` each of ``n_parts`` parts holds, of a task whose shape asks ``cpu_milli``
        and ``memory_mib``, unless chosen at its placement."""
        raise NotImplementedError

    def pieces(self, state, i: int, parts: tuple, demands: tuple | None) -> tuple[Task, ...] | str:
        """The demand of each part of task ``i`` placed in ``parts`` ``((node, gpus), ...)`` (``demands``: one
        ``(cpu_milli, memory_mib)`` per part chosen at placement, or None), each to be judged by the one rule on its
        node; or why the task cannot be placed in those parts."""
        raise NotImplementedError

    def fits(self, state, task: Task) -> bool:
        """Whether ``task`` fits ``state`` now in some parts of this split."""
        raise NotImplementedError


class Span(Split):
    """A task of ``workers == 1``: one part, or whole GPUs over distinct nodes of one GPU model (module docstring)."""

    form = "span"
    each_part_revises = False

    def held(self, cpu_milli: int, memory_mib: int, n_parts: int) -> tuple[tuple[int, int], ...]:
        """All on the first part."""
        return ((cpu_milli, memory_mib),) + ((0, 0),) * (n_parts - 1)

    def pieces(self, state, i: int, parts: tuple, demands: tuple | None) -> tuple[Task, ...] | str:
        task = state.tasks[i]
        if len(parts) > 1:
            if task.gpu_milli != GPU_MILLI or not state._allows(self.form, i):
                return "only a whole-GPU task (not a gang) on a non-MIG cluster may span nodes"
            nodes = [node for node, _ in parts]
            if len(set(nodes)) != len(nodes) or any(not gpus for _, gpus in parts):
                return f"a gang needs parts on distinct nodes, each with GPUs, got {parts}"
            model = state.cluster.model
            if len({model[node] for node in nodes if 0 <= node < len(model)}) > 1:
                return "a gang's nodes must have one GPU model"
        elif not parts:
            return "no parts"
        total = sum(len(gpus) for _, gpus in parts)
        task = state._shape(i, task, total)
        if isinstance(task, str):
            return task
        if total != task.num_gpu:
            return f"the parts hold {total} GPUs, {task.num_gpu} asked"
        held = demands or self.held(task.cpu_milli, task.memory_mib, len(parts))
        return tuple(task._replace(num_gpu=len(gpus), cpu_milli=cpu, memory_mib=mem)
                     for (_, gpus), (cpu, mem) in zip(parts, held, strict=True))

    def fits(self, state, task: Task) -> bool:
        """On one node (:meth:`~fgdopt.state.ClusterState.feasible_nodes`), or, whole-GPU, over several nodes of one
        GPU model: its CPU and memory on one of them, and ``num_gpu`` free GPUs on them in all."""
        if state.feasible_nodes(task).any():
            return True
        if task.num_gpu < 2 or not state._allows(self.form, None):          # num_gpu > 1: whole GPUs
            return False
        free = (state.gpu_left == GPU_MILLI).sum(axis=1)
        host = (state.cpu_left >= task.cpu_milli) & (state.mem_left >= task.memory_mib)
        models = state.cluster.model
        for model in set(models[state.spec_mask(task.gpu_spec)].tolist()):
            nodes = models == model
            if (host & nodes).any() and int(free[nodes].sum()) >= task.num_gpu:
                return True
        return False


class Workers(Split):
    """A gang of ``workers`` identical parts, each the task's :attr:`~fgdopt.model.Task.part` (module docstring)."""

    form = "workers"
    each_part_revises = True

    def held(self, cpu_milli: int, memory_mib: int, n_parts: int) -> tuple[tuple[int, int], ...]:
        """The shape's on every part."""
        return ((cpu_milli, memory_mib),) * n_parts

    def pieces(self, state, i: int, parts: tuple, demands: tuple | None) -> tuple[Task, ...] | str:
        task = state.tasks[i]
        if not state._allows(self.form, i):
            return "a gang cannot be placed on a MIG cluster or be elastic"
        if len(parts) != task.workers:
            return f"{len(parts)} part(s) for a gang of {task.workers} workers"
        part = task.part
        held = demands or self.held(part.cpu_milli, part.memory_mib, len(parts))
        return tuple(part._replace(cpu_milli=cpu, memory_mib=mem) for cpu, mem in held)

    def fits(self, state, task: Task) -> bool:
        """All ``workers`` parts together (:meth:`~fgdopt.state.ClusterState.part_counts`)."""
        return int(state.part_counts(task).sum()) >= task.workers


SPAN = Span()
WORKERS = Workers()


def split_of(workers: int) -> Split:
    """The split of a task of ``workers`` parts: :data:`WORKERS` for a gang (``workers > 1``), else :data:`SPAN`."""
    return WORKERS if workers > 1 else SPAN
