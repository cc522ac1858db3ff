"""GPU interconnect topologies of a node, ring bandwidth, and the mapping of GPU models to topologies.

A :class:`Topology` is a ``networkx`` graph whose vertices are a node's GPUs ``0..G-1`` and whose edges
join *every* pair of GPUs with the connection ``nvidia-smi topo -m`` reports for it: ``kind`` (one of
:data:`LINK_KINDS`), ``links`` (NVLink count, 0 for PCIe paths) and ``gbps`` (GB/s per direction). A pair
joined by NVLink talks over it; any other pair talks over PCIe, through one switch (``PIX``), the
socket's root complex (``NODE``) or the inter-socket link (``SYS``).

**Ring bandwidth.** A multi-GPU task's all-reduce runs over a ring through its GPUs; the ring is as fast as
its slowest hop. The ring bandwidth of a GPU set S (``|S| >= 2``) is the best, over every cyclic order of
S, of the smallest ``gbps`` of consecutive pairs (GB/s per direction; a 2-GPU ring is the pair's link).
For at most 8 GPUs an exact search over the ``(k-1)!/2`` cyclic orders is cheap; it is done once per
topology for all ``2^G`` subsets and kept in :attr:`Topology.ring` (indexed by the bit mask of S).
A placement is **misplaced** when its ring is slower than :meth:`Topology.best_ring` of its size, the
best ring of that size on an empty node of the same type.

**Bandwidths** (GB/s per direction, nominal; only their order matters for "misplaced"):
NVLink 2.0 25 per link (NVIDIA Tesla V100 white paper; "NVIDIA DGX-1 With Tesla V100 System Architecture"
white paper, WP-08437-002), NVSwitch 300 per GPU pair (A100: 12 NVLink 3.0 links x 25 = 600 GB/s
bidirectional, "NVIDIA DGX A100 System Architecture" white paper, WP-10083-001), PCIe 3.0 x16 through one
switch 16, through the root complex 12 and across sockets 8 (assumed: the PCIe peer-to-peer path loses
bandwidth at each level ``nvidia-smi topo -m`` distinguishes; the values are illustrative, the order is
the ``nvidia-smi`` legend's).

**The openb mapping is an assumption**: the trace names GPU models but not how a node's GPUs are linked.
:data:`DEFAULT_MAPPING` gives every (model, GPU count) of openb a shipped topology; replace it with
:meth:`TopologyMap.from_dict` or :meth:`TopologyMap.load` (JSON ``{"<model>": "<topology name>", "<model>x<G>":
..., "x<G>": ...}``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import networkx as nx
import numpy as np

from fgdopt.model import GPU_MILLI, Cluster

MAX_TOPOLOGY_GPUS = 8
"""The most GPUs a :class:`Topology` may describe (its exact ring search is over cyclic orders); a node of more
GPUs (up to :data:`~fgdopt.model.MAX_GPUS_PER_NODE`) has no topology."""

LINK_KINDS = ("NVSwitch", "NVLink", "PIX", "NODE", "SYS")
"""Connection kinds, fastest class first: NVSwitch fabric, direct NVLink (``links`` of them), one PCIe switch,
PCIe through the socket's root complex, PCIe across the CPU sockets."""

NVLINK_GBPS = 25.0
"""NVLink 2.0 (V100), one link, GB/s per direction."""
NVSWITCH_GBPS = 300.0
"""NVSwitch (A100, 12 NVLink 3.0 links per GPU), GB/s per direction between any two GPUs."""
PCIE_GBPS = {"PIX": 16.0, "NODE": 12.0, "SYS": 8.0}
"""PCIe 3.0 x16 peer-to-peer, GB/s per direction: one switch, root complex (assumed), across sockets (assumed)."""


@dataclass(frozen=True, eq=False)
class Topology:
    """One node type's GPU interconnect.

    Attributes
    ----------
    name : short identifier (``"dgx1-v100"``, ...).
    graph : ``networkx.Graph`` on GPUs ``0..G-1``; every pair is an edge with ``kind``, ``links`` and ``gbps``
        (GB/s per direction).
    source : the public document the layout follows.
    """

    name: str
    graph: nx.Graph
    source: str = ""
    _best_free: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        g = self.graph.number_of_nodes()
        if sorted(self.graph.nodes) != list(range(g)) or not 1 <= g <= MAX_TOPOLOGY_GPUS:
            raise ValueError(f"{self.name}: GPUs must be 0..G-1 with 1 <= G <= {MAX_TOPOLOGY_GPUS}")
        for a, b in itertools.combinations(range(g), 2):
            data = self.graph.get_edge_data(a, b)
            if data is None or data.get("kind") not in LINK_KINDS or not data.get("gbps", 0) > 0:
                raise ValueError(f"{self.name}: GPUs {a} and {b} need an edge with a kind in {LINK_KINDS} and gbps > 0")

    @property
    def n_gpus(self) -> int:
        return self.graph.number_of_nodes()

    @cached_property
    def bandwidth(self) -> np.ndarray:
        """(G, G) float: GB/s per direction between two GPUs (``inf`` on the diagonal)."""
        g = self.n_gpus
        bw = np.full((g, g), np.inf)
        for a, b, gbps in self.graph.edges(data="gbps"):
            bw[a, b] = bw[b, a] = gbps
        bw.setflags(write=False)
        return bw

    @cached_property
    def ring(self) -> np.ndarray:
        """(2^G,) float: ring bandwidth (GB/s) of the GPU set with bit mask ``m`` (``inf`` for 0 or 1 GPU)."""
        g = self.n_gpus
        out = np.full(1 << g, np.inf)
        for mask in range(1 << g):
            gpus = mask_gpus(mask)
            if len(gpus) >= 2:
                out[mask] = ring_bandwidth(self.bandwidth, gpus)
        out.setflags(write=False)
        return out

    @cached_property
    def best_ring_by_size(self) -> np.ndarray:
        """(G+1,) float: best ring bandwidth of k GPUs on an empty node (``inf`` for k <= 1)."""
        sizes = popcounts(1 << self.n_gpus)
        best = np.array([self.ring[sizes == k].max() for k in range(self.n_gpus + 1)])
        best.setflags(write=False)
        return best

    def best_ring(self, k: int) -> float:
        """Best ring bandwidth (GB/s) of ``k`` GPUs on an empty node of this type (``inf`` for k <= 1)."""
        return float(self.best_ring_by_size[k])

    def ring_of(self, gpus) -> float:
        """Ring bandwidth (GB/s) of the GPU ids ``gpus`` (``inf`` for fewer than 2)."""
        return float(self.ring[gpus_mask(gpus)])

    @cached_property
    def well_linked(self) -> np.ndarray:
        """(G+1, 2^G) bool: does the free set with mask ``m`` hold ``k`` GPUs whose ring reaches ``best_ring(k)``?

        Row ``k <= 1`` is "at least k GPUs free" (every set of 0 or 1 GPU is well linked).
        """
        g = self.n_gpus
        sizes = popcounts(1 << g)
        good = np.zeros((g + 1, 1 << g), dtype=bool)
        for k in range(g + 1):
            hit = (sizes == k) & (self.ring >= self.best_ring_by_size[k])
            good[k] = hit
        # superset closure: m qualifies when some subset of m does (masks in increasing order)
        for m in range(1 << g):
            for b in range(g):
                if m >> b & 1:
                    good[:, m] |= good[:, m ^ (1 << b)]
        good.setflags(write=False)
        return good

    @cached_property
    def ranked_sets(self) -> tuple[np.ndarray, ...]:
        """Per k: the k-GPU masks, best ring first, ties by lowest GPU indices (lexicographic order of ids)."""
        sizes = popcounts(1 << self.n_gpus)
        out = []
        for k in range(self.n_gpus + 1):
            masks = np.flatnonzero(sizes == k)
            key = sorted(masks.tolist(), key=lambda m: (-self.ring[m], mask_gpus(m)))
            arr = np.array(key, dtype=np.int64)
            arr.setflags(write=False)
            out.append(arr)
        return tuple(out)

    def best_free_set(self, free_mask: int, k: int) -> tuple[int, ...]:
        """The ``k`` free GPUs (within ``free_mask``) with the best ring, ties by lowest indices (cached per
        ``(free_mask, k)``).

        Raises
        ------
        ValueError : fewer than ``k`` GPUs are free.

        Examples
        --------
        >>> dgx1_v100().best_free_set(0b11111111, 2)   # GPUs 0 and 3 share two NVLinks
        (0, 3)
        """
        got = self._best_free.get((free_mask, k))
        if got is None:
            masks = self.ranked_sets[k]
            ok = masks[(masks & ~free_mask) == 0]
            if len(ok) == 0:
                raise ValueError(f"{self.name}: fewer than {k} free GPUs in mask {free_mask:#b}")
            got = self._best_free[(free_mask, k)] = mask_gpus(int(ok[0]))
        return got

    def to_dict(self) -> dict:
        """JSON-ready description: name, source and the edges with their attributes."""
        return {"name": self.name, "source": self.source,
                "edges": [[a, b, d["kind"], d["links"], d["gbps"]] for a, b, d in sorted(self.graph.edges(data=True))]}


# -- helpers ---------------------------------------------------------------------------------

def mask_gpus(mask: int) -> tuple[int, ...]:
    """GPU ids of a bit mask, ascending. ``mask_gpus(0b1010) == (1, 3)``."""
    return tuple(b for b in range(MAX_TOPOLOGY_GPUS) if mask >> b & 1)


def gpus_mask(gpus) -> int:
    """Bit mask of GPU ids. ``gpus_mask((1, 3)) == 0b1010``."""
    return sum(1 << int(g) for g in gpus)


def popcounts(n: int) -> np.ndarray:
    """(n,) int: number of set bits of ``0..n-1``."""
    masks = np.arange(n)
    return np.array([bin(m).count("1") for m in masks.tolist()], dtype=np.int64)


def ring_bandwidth(bandwidth: np.ndarray, gpus) -> float:
    """Exact best-ring bottleneck (GB/s) over the GPU ids ``gpus`` for a (G, G) ``bandwidth`` matrix.

    Tries every cyclic order with the first GPU fixed and each reflection once: ``(k-1)!/2`` rings, 2520 for
    8 GPUs. Two GPUs form the ring a-b-a (the pair's link); fewer than two: ``inf``.

    Examples
    --------
    >>> bw = dgx1_v100().bandwidth
    >>> ring_bandwidth(bw, (0, 1, 2, 3)), ring_bandwidth(bw, (0, 1, 2, 4))   # GPU 4 reaches 1, 2 only by SYS
    (25.0, 8.0)
    """
    gpus = list(gpus)
    k = len(gpus)
    if k < 2:
        return float("inf")
    if k == 2:
        return float(bandwidth[gpus[0], gpus[1]])
    first, rest = gpus[0], gpus[1:]
    best = 0.0
    for order in itertools.permutations(rest):
        if order[0] > order[-1]:     # each ring once (its reflection has the ends swapped)
            continue
        hops = [bandwidth[first, order[0]], bandwidth[order[-1], first]]
        hops += [bandwidth[a, b] for a, b in itertools.pairwise(order)]
        best = max(best, float(min(hops)))
    return best


def _graph(n: int, link) -> nx.Graph:
    """Complete graph on GPUs ``0..n-1``; ``link(a, b) -> (kind, links)`` sets every edge."""
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    for a, b in itertools.combinations(range(n), 2):
        kind, links = link(a, b)
        gbps = {"NVSwitch": NVSWITCH_GBPS, "NVLink": NVLINK_GBPS * links}.get(kind) or PCIE_GBPS[kind]
        graph.add_edge(a, b, kind=kind, links=links, gbps=gbps)
    return graph


def _pcie(switch_of, socket_of):
    def link(a: int, b: int) -> tuple[str, int]:
        if socket_of(a) != socket_of(b):
            return "SYS", 0
        return ("PIX", 0) if switch_of(a) == switch_of(b) else ("NODE", 0)
    return link


# -- shipped topologies ----------------------------------------------------------------------

DGX1_NVLINKS = {(0, 1): 1, (0, 2): 1, (0, 3): 2, (0, 4): 2, (1, 2): 2, (1, 3): 1, (1, 5): 2, (2, 3): 2, (2, 6): 1,
                (3, 7): 1, (4, 5): 1, (4, 6): 1, (4, 7): 2, (5, 6): 2, (5, 7): 1, (6, 7): 2}
"""NVLink count per GPU pair of the DGX-1 V100 hybrid cube-mesh (its ``nvidia-smi topo -m`` NV1 / NV2 entries):
a cube 0-1-2-3 / 4-5-6-7 with the diagonals of two faces, six links per GPU; the NV2 pairs form the ring
0-3-2-1-5-6-7-4. GPUs 0-3 hang off CPU 0, 4-7 off CPU 1; a pair without NVLink crosses the sockets (SYS)."""


def dgx1_v100() -> Topology:
    """NVIDIA DGX-1 with Tesla V100: 8 GPUs in the hybrid cube-mesh of :data:`DGX1_NVLINKS`."""
    def link(a: int, b: int) -> tuple[str, int]:
        n = DGX1_NVLINKS.get((a, b), 0)
        return ("NVLink", n) if n else ("SYS", 0)
    return Topology("dgx1-v100", _graph(8, link),
                    "NVIDIA, 'NVIDIA DGX-1 With Tesla V100 System Architecture' white paper (WP-08437-002), "
                    "hybrid cube-mesh figure; NV1/NV2 as in the DGX-1V 'nvidia-smi topo -m' matrix")


def nvswitch8() -> Topology:
    """An 8-GPU NVSwitch board (DGX A100 / HGX A100 8-GPU): every pair at full NVSwitch bandwidth."""
    return Topology("nvswitch-8", _graph(8, lambda a, b: ("NVSwitch", 12)),
                    "NVIDIA, 'NVIDIA DGX A100 System Architecture' white paper (WP-10083-001): six NVSwitches, "
                    "600 GB/s bidirectional per GPU")


def pcie8_two_sockets() -> Topology:
    """8 PCIe GPUs, two per PCIe switch, two switches per CPU socket (GPUs 0-3 on socket 0, 4-7 on socket 1)."""
    return Topology("pcie-8", _graph(8, _pcie(lambda g: g // 2, lambda g: g // 4)),
                    "the common 2-socket 8-GPU PCIe server layout ('nvidia-smi topo -m' legend: PIX / NODE / SYS)")


def pcie4() -> Topology:
    """4 PCIe GPUs on one socket, two per PCIe switch."""
    return Topology("pcie-4", _graph(4, _pcie(lambda g: g // 2, lambda g: 0)),
                    "a 1-socket 4-GPU PCIe box, two GPUs per switch ('nvidia-smi topo -m' legend: PIX / NODE)")


def pcie2() -> Topology:
    """2 PCIe GPUs behind one PCIe switch."""
    return Topology("pcie-2", _graph(2, _pcie(lambda g: 0, lambda g: 0)),
                    "a 2-GPU PCIe box, both GPUs on one switch ('nvidia-smi topo -m': PIX)")


def single_gpu() -> Topology:
    """One GPU: no ring to form."""
    return Topology("single", _graph(1, _pcie(lambda g: 0, lambda g: 0)), "one GPU, no interconnect")


SHIPPED = {t.name: t for t in (dgx1_v100(), nvswitch8(), pcie8_two_sockets(), pcie4(), pcie2(), single_gpu())}
"""The shipped topologies by name."""

DEFAULT_MAPPING = {"G3": "nvswitch-8", "x8": "dgx1-v100", "x4": "pcie-4", "x2": "pcie-2", "x1": "single"}
"""The assumed openb mapping (the trace has no topology): G3 (the 128-core, 1 TiB 8-GPU type, the newest
generation) an NVSwitch board; every other 8-GPU node (G2, V100M16, V100M32) a DGX-1-like hybrid cube-mesh;
4-, 2- and 1-GPU nodes PCIe boxes. Keys: ``"<model>x<G>"`` beats ``"<model>"`` beats ``"x<G>"``."""


@dataclass(frozen=True, eq=False)
class TopologyMap:
    """Which topology each node type has: keys ``"<model>x<G>"``, ``"<model>"`` or ``"x<G>"`` (first match wins,
    in that order) to :class:`Topology` values. Replace :data:`DEFAULT_MAPPING` with your own.

    Examples
    --------
    >>> TopologyMap.default().lookup("V100M32", 8).name, TopologyMap.default().lookup("G3", 8).name
    ('dgx1-v100', 'nvswitch-8')
    """

    entries: Mapping[str, Topology] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, mapping: Mapping[str, str | Topology]) -> TopologyMap:
        """From ``key -> topology name (one of SHIPPED) or Topology``; ``ValueError`` on an unknown name."""
        out = {}
        for key, value in mapping.items():
            if isinstance(value, str):
                if value not in SHIPPED:
                    raise ValueError(f"unknown topology {value!r} for {key!r}; shipped: {sorted(SHIPPED)}")
                value = SHIPPED[value]
            out[str(key)] = value
        return cls(out)

    @classmethod
    def default(cls) -> TopologyMap:
        return cls.from_dict(DEFAULT_MAPPING)

    @classmethod
    def load(cls, path: str | Path) -> TopologyMap:
        """From a JSON object ``{"<key>": "<shipped topology name>", ...}``.

        Raises
        ------
        ValueError : not JSON, not an object, or an unknown topology name; one line naming the file.
        """
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a JSON object of model -> topology name, got a {type(data).__name__}")
        try:
            return cls.from_dict(data)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    def lookup(self, model: str, n_gpus: int) -> Topology:
        """The topology of a node with ``n_gpus`` GPUs of ``model``.

        Raises
        ------
        ValueError : no key matches, or the match has another GPU count.
        """
        for key in (f"{model}x{n_gpus}", model, f"x{n_gpus}"):
            if key in self.entries:
                topo = self.entries[key]
                if topo.n_gpus != n_gpus:
                    raise ValueError(f"topology {topo.name!r} ({topo.n_gpus} GPUs) mapped to {model} "
                                     f"with {n_gpus} GPUs")
                return topo
        counts = sorted({t.n_gpus for t in SHIPPED.values()})
        raise ValueError(f"no topology for model {model!r} with {n_gpus} GPUs (keys: {sorted(self.entries)}; the "
                         f"shipped topologies have {', '.join(map(str, counts))} GPUs)")

    def for_cluster(self, cluster: Cluster) -> ClusterTopology:
        """Every node's topology, as the lookup tables the policies and the evaluator use.

        Raises
        ------
        ValueError : a node has none (:meth:`lookup`); one line naming the node.
        """
        topos: list[Topology] = []
        index = np.zeros(cluster.n_nodes, dtype=np.int64)
        seen: dict[str, int] = {}
        for n, (model, g) in enumerate(zip(cluster.model.tolist(), cluster.gpu.tolist(), strict=True)):
            try:
                topo = self.lookup(model, int(g)) if g else single_gpu()
            except ValueError as exc:
                raise ValueError(f"node {n} ({cluster.names[n]}): {exc}") from None
            if topo.name not in seen:
                seen[topo.name] = len(topos)
                topos.append(topo)
            index[n] = seen[topo.name]
        return ClusterTopology(cluster, tuple(topos), index)


@dataclass(frozen=True, eq=False)
class ClusterTopology:
    """The topology of every node of ``cluster``: ``topologies[node_type[n]]`` is node n's.

    The tables are padded to 8 GPUs (``2^8`` masks) so that all node types share one array:
    ``ring[t, m]`` (GB/s), ``best[t, k]`` (GB/s) and ``well_linked[t, k, m]``.
    """

    cluster: Cluster
    topologies: tuple[Topology, ...]
    node_type: np.ndarray

    @cached_property
    def ring(self) -> np.ndarray:
        out = np.full((len(self.topologies), 1 << MAX_TOPOLOGY_GPUS), np.nan)
        for t, topo in enumerate(self.topologies):
            out[t, : 1 << topo.n_gpus] = topo.ring
        return out

    @cached_property
    def best(self) -> np.ndarray:
        out = np.full((len(self.topologies), MAX_TOPOLOGY_GPUS + 1), np.nan)
        for t, topo in enumerate(self.topologies):
            out[t, : topo.n_gpus + 1] = topo.best_ring_by_size
        return out

    @cached_property
    def well_linked(self) -> np.ndarray:
        out = np.zeros((len(self.topologies), MAX_TOPOLOGY_GPUS + 1, 1 << MAX_TOPOLOGY_GPUS), dtype=bool)
        for t, topo in enumerate(self.topologies):
            out[t, : topo.n_gpus + 1, : 1 << topo.n_gpus] = topo.well_linked
        return out

    def of(self, node: int) -> Topology:
        return self.topologies[int(self.node_type[node])]

    def linked(self, num_gpu: np.ndarray, gpu_left: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """(M, K) bool: do the free GPUs of row k (``gpu_left[k]`` of node ``nodes[k]``) hold ``num_gpu[m]`` GPUs
        forming a best ring? (True for ``num_gpu <= 1``: no ring is needed.)"""
        free = free_masks(gpu_left)
        kinds = self.node_type[nodes]
        k = np.minimum(np.asarray(num_gpu), MAX_TOPOLOGY_GPUS)
        out = self.well_linked[kinds[None, :], k[:, None], free[None, :]]
        return out | (k[:, None] <= 1)

    def ring_of(self, node: int, gpus) -> float:
        """Ring bandwidth (GB/s) of ``gpus`` on ``node``."""
        return float(self.ring[self.node_type[node], gpus_mask(gpus)])

    def best_ring(self, node: int, k: int) -> float:
        """Best ring bandwidth (GB/s) of ``k`` GPUs on an empty node like ``node``."""
        return float(self.best[self.node_type[node], k])


def free_masks(gpu_left: np.ndarray) -> np.ndarray:
    """Bit masks of the completely free GPUs of each row of ``gpu_left`` ((K, G) milli-GPU, G <= 8)."""
    bits = 1 << np.arange(gpu_left.shape[-1], dtype=np.int64)
    return ((gpu_left == GPU_MILLI) * bits).sum(axis=-1)


@dataclass(frozen=True, eq=False)
class RingReport:
    """Ring quality of the placed multi-GPU tasks (``num_gpu >= 2``) of a placement.

    Attributes
    ----------
    task : int64 (P,), task index; ``node``, ``num_gpu`` likewise.
    ring_gbps : float (P,), ring bandwidth of the task's GPUs (GB/s per direction).
    best_gbps : float (P,), best ring of ``num_gpu`` GPUs on an empty node of the same type.
    misplaced : bool (P,), ``ring_gbps < best_gbps``.
    """

    task: np.ndarray
    node: np.ndarray
    num_gpu: np.ndarray
    ring_gbps: np.ndarray
    best_gbps: np.ndarray
    misplaced: np.ndarray

    @property
    def n_tasks(self) -> int:
        return len(self.task)

    @property
    def n_misplaced(self) -> int:
        return int(self.misplaced.sum())

    @property
    def mean_ring_gbps(self) -> float:
        """Mean ring bandwidth of the placed multi-GPU tasks (GB/s; NaN if there are none)."""
        return float(self.ring_gbps.mean()) if len(self.task) else float("nan")


def ring_report(topology: ClusterTopology, num_gpu: np.ndarray, node: np.ndarray,
                gpus: tuple[tuple[int, ...], ...]) -> RingReport:
    """The :class:`RingReport` of a placement (``node[i]``, ``gpus[i]``) of tasks with ``num_gpu[i]`` GPUs.

    Parameters
    ----------
    topology : the cluster's :class:`ClusterTopology`.
    num_gpu : (T,) GPUs per task; node : (T,) node per task (-1 = unallocated); gpus : GPU ids per task.

    Examples
    --------
    >>> from fgdopt.model import Cluster
    >>> topo = TopologyMap.default().for_cluster(Cluster([96000], [1], [8], ["G2"]))
    >>> r = ring_report(topo, np.array([2, 2]), np.array([0, 0]), ((0, 3), (1, 4)))
    >>> r.ring_gbps.tolist(), r.misplaced.tolist()
    ([50.0, 8.0], [False, True])
    """
    num_gpu, node = np.asarray(num_gpu), np.asarray(node)
    rows = np.flatnonzero((num_gpu >= 2) & (node >= 0))
    ring = np.array([topology.ring_of(int(node[i]), gpus[i]) for i in rows], dtype=float)
    best = np.array([topology.best_ring(int(node[i]), int(num_gpu[i])) for i in rows], dtype=float)
    return RingReport(rows, node[rows], num_gpu[rows], ring, best, ring < best)
