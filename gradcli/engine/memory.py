"""The memory a program's evaluation will take, simulated from its shapes before anything runs."""
from __future__ import annotations

import math
import os

from gradcli.engine import fusion
from gradcli.engine.backends import Backend
from gradcli.engine.evaluate import needed_equations
from gradcli.errors import GradcliError, OptionError
from gradcli.ir import Graph
from gradcli.ops import scalar as numbers
from gradcli.limits import RENDER_COPIES, default_memory_limit, describe_size, output_text_bytes


def check_memory(graph: Graph, fetch: list[int], dtype: str, limit: int | None = None, text: bool = True,
                 backend=None, gathered: bool = True) -> None:
    """Refuse, before anything runs, a program whose arrays would not fit: shapes are known,
    so the evaluation's peak is simulated (values freed after their last use, views free),
    and the text the fetched values make (an output is rendered whole before it is written).
    On a chunked backend (Dask) a value is held a chunk per worker at a time, not whole,
    except the fetched values, which are gathered whole unless they are written to a file
    as they are computed (`gathered=False`)."""
    import numpy as np

    limit = limit or default_memory_limit()
    # chunked: the most of one value held at once, and the task graph's own memory
    per_value, graph_bytes = chunked_memory(graph, fetch, dtype, limit, backend)
    graph_bytes += chunk_buffers(graph, fetch, dtype, backend)  # counted throughout, as the task graph
    itemsize = numbers.FLOAT64.itemsize if numbers.numbers_only() else np.dtype(dtype).itemsize
    fetched = sum(math.prod(graph.shapes[f]) for f in set(fetch))
    text = output_text_bytes(fetched) if text else 0  # the fetched values printed (not for check, derive)
    rendering = RENDER_COPIES * text
    if rendering > limit:
        f = max(set(fetch), key=lambda j: math.prod(graph.shapes[j]))
        raise OptionError(f"the output would be {fetched:,} numbers, about {describe_size(text)} of text ({describe_size(rendering)} "
                          f"while it is rendered), more than the {describe_size(limit)} allowed; raise the limit with "
                          "{option} if the machine has it", "max_memory", graph.equations[f].pos, graph.source)
    if sum(map(math.prod, graph.shapes)) * itemsize + rendering + graph_bytes <= limit:
        return  # even holding every value at once fits: no need to simulate
    if per_value is not None and gathered:
        held = fetched * itemsize
        if held + rendering > limit:
            f = max(set(fetch), key=lambda j: math.prod(graph.shapes[j]))
            raise OptionError(f"the outputs are {describe_size(held)} of values, gathered whole, more than the "
                              f"{describe_size(limit)} allowed; raise the limit with {{option}} if the machine has it",
                              "max_memory", graph.equations[f].pos, graph.source)
    last_use: dict[int, int] = {}
    order = needed_equations(graph, fetch, last_use=last_use)
    keep = set(fetch) if gathered or per_value is None else set()
    live = graph_bytes
    sizes: dict[int, int] = {}
    strided: set[int] = set()  # values that may be non-contiguous views: a reshape of one copies
    for i in order:
        eq = graph.equations[i]
        full = math.prod(graph.shapes[i]) * itemsize
        if per_value is not None and i not in keep:
            full = min(full, per_value)  # a chunk per worker at a time
        memory = eq.op.memory
        if memory == "reshape":
            memory = "view" if not strided.intersection(eq.inputs) else "new"
        if memory == "view" or (memory == "same" and strided.intersection(eq.inputs)):
            strided.add(i)
        size = 0 if memory in ("view", "same") else full  # a view shares memory, its consumers do not
        if full > limit or live + size > limit:
            size = max(size, full)
            what = "this operation" if eq.inputs else "this value"
            held = f" on top of the {describe_size(live)} already held," if size <= limit else ""
            raise OptionError(
                f"{what} would need a {graph.shapes[i]} array of {dtype} ({describe_size(size)}),{held} more than "
                f"the {describe_size(limit)} allowed; raise the limit with {{option}} if the machine has it",
                "max_memory", eq.pos, graph.source)
        sizes[i] = size
        live += size
        for j in set(eq.inputs):
            # inputs and constants are held by the caller and the graph: they are never freed
            if last_use.get(j) == i and j not in keep and graph.equations[j].inputs:
                if size == 0:  # a view keeps what it views alive: its memory passes on to it
                    sizes[i] += sizes.pop(j, 0)
                else:
                    live -= sizes.pop(j, 0)
    if live + rendering > limit:  # the values still held while their text is rendered
        f = max(set(fetch), key=lambda j: math.prod(graph.shapes[j]))
        raise GradcliError(f"the output would be {fetched:,} numbers, about {describe_size(text)} of text, which with the "
                           f"{describe_size(live)} of values held is more than the {describe_size(limit)} allowed; raise the limit "
                           "with --max-memory if the machine has it", graph.equations[f].pos, graph.source)


def chunk_buffers(graph: Graph, fetch: list[int], dtype: str, backend) -> int:
    """The chunk buffers of the fused chains (gradcli/engine/fusion.py), a set per thread computing
    a chain's chunks: NumPy's backend only, where a value is large enough to be fused."""
    backend = backend or Backend()
    if not backend.numpy or max(map(math.prod, graph.shapes), default=0) < fusion.MIN_ELEMENTS:
        return 0
    last_use: dict[int, int] = {}
    order = needed_equations(graph, fetch, last_use=last_use)
    chains, _ = fusion.plan(graph, order, last_use, set(fetch), {}, backend)
    return fusion.scratch_bytes(chains, graph, dtype, backend.chunk_threads())


# What Dask's task graph takes per block of each value computed (its tasks in every form Dask
# builds: the collections, the optimised graph, the scheduler's state): about 2.5 KiB a task
# measured (4 MiB cut into 1 KiB blocks: 52 MiB more than into 16 KiB ones), a block making 1
# to 3 tasks (the op, the checks' statistics, a reduction's partials)
GRAPH_BYTES_PER_BLOCK = 8 << 10


def chunked_memory(graph: Graph, fetch: list[int], dtype: str, limit: int, backend) -> tuple[int | None, int]:
    """On a chunked backend (Dask): (the most of one value held at once, a chunk per core; the
    task graph's memory, GRAPH_BYTES_PER_BLOCK per block of every value computed), refusing a
    graph that alone would not fit; (None, 0) elsewhere."""
    import numpy as np

    if backend is None or backend.memory != "chunks":
        return None, 0
    itemsize, chunk = np.dtype(dtype).itemsize, backend.chunk_bytes
    blocks = sum(max(1, -(-math.prod(graph.shapes[i]) * itemsize // chunk)) for i in needed_equations(graph, fetch))
    graph_bytes = blocks * GRAPH_BYTES_PER_BLOCK
    if graph_bytes > limit:
        raise OptionError(f"on --device dask, {{option}} of {describe_size(chunk)} cuts the values into {blocks:,} "
                          f"blocks: the task graph alone would take about {describe_size(graph_bytes)}, more than "
                          f"the {describe_size(limit)} allowed by --max-memory; give larger {{option}}", "chunks")
    return chunk * (os.cpu_count() or 1), graph_bytes
