"""The commands: each hands its library call (gradcli.api) and its view (gradcli.cli.render) to
`Run`, which reads the program and the --set values, answers and exits.

Each function takes exactly the keywords that gradcli/cli/spec.py declares for its command, with
the values converted (a choice as its Enum member); the declaration holds the defaults, the help
and the option names. This module is imported only when a command runs (it imports the library).
"""
from __future__ import annotations

import sys

from gradcli import api
from gradcli.cli import render, streams
from gradcli.cli.run import Run, assignments, chunk_size
from gradcli.cli.spec import GraphFormat
from gradcli.errors import GradcliError


def _shared_by_lines(lines: bool, library_call, prepare, options):
    """The command's `compute(text, name, feeds, limit)`: `library_call(text, **options(name, feeds,
    limit))`; with --lines, lines that differ only in numbers share one program compiled by
    `prepare` with the same options (gradcli.cli.lines)."""
    def compute(text, name, feeds, limit):
        return library_call(text, **options(name, feeds, limit))

    if not lines:
        return compute
    from gradcli.cli.lines import cached  # (listed in gradcli.cli.LAZY_IMPORTS)
    return cached(compute, lambda text, name, feeds, limit: prepare(text, **options(name, feeds, limit)))


def eval_command(*, file, expr, set_, call, print_, format, dtype, accumulate, device, strict, lines, max_memory, out,
                 force, chunks, scheduler, debug) -> None:
    def options(name, feeds, limit):
        return dict(name=name, feeds=feeds, call=call, prints=print_ or [], dtype=dtype.value, accumulate=accumulate.value,
                    device=device.value, max_memory=limit, printed=out is None, chunks=chunk_size(chunks),
                    scheduler=scheduler, store=run.store)

    run = Run(file, expr, set_, format.value, lines, strict, max_memory, debug, device.value).saving(out, force)
    run.answer(render.EVAL, _shared_by_lines(lines, api.evaluate, api.prepare_evaluate, options))


def grad_command(*, file, expr, wrt, of, grad_ys, unconnected, set_, call, format, dtype, accumulate, loss_scale, device,
                 strict, lines, max_memory, out, force, chunks, scheduler, debug) -> None:
    def options(name, feeds, limit):
        return dict(name=name, feeds=feeds, call=call, wrt=wrt or [], of=of or None,
                    grad_ys=assignments(grad_ys or [], "--grad-ys", limit), unconnected=unconnected.value,
                    dtype=dtype.value, accumulate=accumulate.value, device=device.value, max_memory=limit,
                    printed=out is None, chunks=chunk_size(chunks), scheduler=scheduler, store=run.store)

    run = Run(file, expr, set_, format.value, lines, strict, max_memory, debug, device.value).saving(out, force)
    if loss_scale is not None:
        run.answer(render.GRAD_SCALED, lambda text, name, feeds, limit: _scaled_grad(text, loss_scale, options(
            name, feeds, limit)))
        return
    run.answer(render.GRAD, _shared_by_lines(lines, api.grad, api.prepare_grad, options))


def _scaled_grad(text: str, given: str, options: dict):
    """grad with --loss-scale (gradcli.numerics.loss_scale): the program in --dtype, and in float32
    for the measure of auto (and the suggestion after an overflow)."""
    from gradcli.numerics import loss_scale  # (listed in gradcli.cli.LAZY_IMPORTS)

    scale = loss_scale.parse_scale(given)
    if options["store"] is not None:  # (the gradients are divided back once computed: they come back whole)
        raise GradcliError("--loss-scale divides the gradients once they are computed: it cannot write them to a "
                           ".zarr directory chunk by chunk; use --out with .npz or .npy")
    wrt, of, grad_ys, unconnected = (options.pop(k) for k in ("wrt", "of", "grad_ys", "unconnected"))
    name, feeds, call = (options.pop(k) for k in ("name", "feeds", "call"))
    program = api.compile(text, name=name, call=call, feeds=feeds, options=api.RunOptions(**options))
    float32 = api.compile(text, name=name, call=call, feeds=feeds, options=api.RunOptions(
        "float32", max_memory=options["max_memory"], printed=False))
    return loss_scale.scaled_grad(program, float32, wrt, of, grad_ys, scale, unconnected)


def check_command(*, file, expr, wrt, of, set_, call, eps, rtol, atol, dtype, accumulate, loss_scale, format, lines,
                  max_memory, debug) -> None:
    if dtype.value not in ("float64", "float32") or loss_scale is not None:
        Run(file, expr, set_, format.value, lines, False, max_memory, debug).answer(
            render.CHECK_PRECISION, lambda text, name, feeds, limit: _precision(
                text, loss_scale, dict(name=name, feeds=feeds, call=call, wrt=wrt or [], of=of or [], dtype=dtype.value,
                                       accumulate=accumulate.value, max_memory=limit)))
        return
    Run(file, expr, set_, format.value, lines, False, max_memory, debug).answer(
        render.CHECK, lambda text, name, feeds, limit: api.check(
            text, name=name, feeds=feeds, call=call, wrt=wrt or [], of=of or None, eps=eps, rtol=rtol, atol=atol,
            max_memory=limit))


def jacobian_command(*, file, expr, of, wrt, set_, call, unconnected, format, dtype, accumulate, lines, max_memory,
                     out, force, debug) -> None:
    Run(file, expr, set_, format.value, lines, False, max_memory, debug).saving(out, force).answer(
        render.JACOBIAN, lambda text, name, feeds, limit: api.jacobian(
            text, name=name, feeds=feeds, call=call, of=of, wrt=wrt or [], unconnected=unconnected.value,
            max_memory=limit, printed=out is None, dtype=dtype.value, accumulate=accumulate.value))


def hessian_command(*, file, expr, of, wrt, set_, call, unconnected, format, dtype, accumulate, lines, max_memory,
                    out, force, debug) -> None:
    Run(file, expr, set_, format.value, lines, False, max_memory, debug).saving(out, force).answer(
        render.HESSIAN, lambda text, name, feeds, limit: api.hessian(
            text, name=name, feeds=feeds, call=call, of=of, wrt=wrt or [], unconnected=unconnected.value,
            max_memory=limit, printed=out is None, dtype=dtype.value, accumulate=accumulate.value))


def derive_command(*, file, expr, wrt, of, set_, call, format, lines, max_memory, debug) -> None:
    def derive(text, name, feeds, limit):
        if wrt is None:  # the library's wrt is not optional
            raise GradcliError("derive takes one --wrt NAME")
        return api.derivation(text, name=name, feeds=feeds, call=call, wrt=wrt, of=of or None, max_memory=limit)

    Run(file, expr, set_, format.value, lines, False, max_memory, debug).answer(render.DERIVE, derive)


def fix_command(*, file, expr, set_, call, wrt, of, diff, dtype, accumulate, format, max_memory, debug) -> None:
    Run(file, expr, set_, format.value, False, False, max_memory, debug).answer(
        render.fix_view(diff), lambda text, name, feeds, limit: api.fix(
            text, name=name, feeds=feeds, call=call, wrt=wrt or [], of=of or None, dtype=dtype.value,
            accumulate=accumulate.value, max_memory=limit))


def graph_command(*, file, expr, wrt, of, set_, call, format, max_memory, debug) -> None:
    fmt = "table" if format is GraphFormat.tree else format.value
    Run(file, expr, set_, fmt, False, False, max_memory, debug).answer(
        render.GRAPH, lambda text, name, feeds, limit: api.graph_view(
            text, name=name, feeds=feeds, call=call, of=of, wrt=wrt or [], max_memory=limit))


def plot_command(*, file, expr, wrt, range_, of, set_, call, order, points, png, svg, force, dtype, accumulate,
                 max_memory, debug) -> None:
    from gradcli.cli import plotting  # (gradcli.cli.LAZY_IMPORTS)

    def compute(text, name, feeds, limit):
        files[:] = plotting.check_files(png, svg, force)  # before anything is computed
        low, high = plotting.parse_range(range_)
        return api.curve(text, name=name, feeds=feeds, call=call, wrt=wrt, low=low, high=high, points=points,
                         of=of, order=order, max_memory=limit, dtype=dtype.value, accumulate=accumulate.value)

    def present(curve, name):
        for diag in curve.diagnostics:
            streams.say(render.diagnostic_text(diag, curve.graph.source))
        if files:
            plotting.write_files(curve, files, force)
            return [], 0
        terminal = sys.stdout is not None and sys.stdout.isatty()
        height = max(12 * (1 + len(curve.derivatives)), 24)
        return [plotting.draw_terminal(curve, render.terminal_width(), height, terminal)], 0

    files: list = []
    Run(file, expr, set_, "plain", False, False, max_memory, debug).answer(None, compute, present)


def _precision(text: str, given: str | None, options: dict):
    """check --dtype of a half type: the precision report (gradcli.numerics.precision), its
    gradients computed with the loss scale given (auto: measured as grad measures it)."""
    from gradcli.numerics import loss_scale, precision  # (listed in gradcli.cli.LAZY_IMPORTS)

    dtype, limit, wrt, of, accumulate = (options[k] for k in ("dtype", "max_memory", "wrt", "of", "accumulate"))
    if dtype in ("float64", "float32"):
        raise GradcliError(f"--loss-scale applies to check with a half-precision --dtype (float16, bfloat16, float8), "
                           f"not {dtype}: the finite-difference check runs in float64")
    program = api.compile(text, name=options["name"], call=options["call"], feeds=options["feeds"],
                          options=api.RunOptions(dtype, max_memory=limit, printed=False, accumulate=accumulate))
    if given is None:
        return precision.report(program, wrt, of, accumulate=accumulate)
    float32 = api.compile(text, name=options["name"], call=options["call"], feeds=options["feeds"],
                          options=api.RunOptions("float32", max_memory=limit, printed=False))
    result = loss_scale.scaled_grad(program, float32, wrt, of, None, loss_scale.parse_scale(given), fixes=False)
    result.precision = precision.measure(program.graph.fork(), wrt, of, dtype, result.loss_scale.scale, accumulate,
                                         max_memory=limit)
    return result
