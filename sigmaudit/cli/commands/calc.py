"""``sigmaudit calc``: the closed forms for one or more p and G."""

from __future__ import annotations

from typing import Annotated

import typer

from ..options import EpsOpt, FormatOpt, OutputOpt, emit_result, group_size_option, unit_interval


def calc(
    p: Annotated[list[float], typer.Option("-p", "--pass-rate",
                                           help="Prompt success probability in [0, 1] (repeatable).",
                                           callback=lambda v: [unit_interval(x) for x in v])],
    G: Annotated[list[int], group_size_option("Group size G >= 1 (repeatable).", show_default=True)],
    eps: EpsOpt = 0.05,
    fmt: FormatOpt = None,
    output: OutputOpt = None,
) -> None:
    """Closed forms for a prompt of difficulty p sampled in groups of G.

    Silent rate p^G + (1−p)^G and its branches, exact E[σ], fidelity φ, its
    large-G attenuation, GRPO's difficulty weight, the group size needed for
    φ ≥ 1 − ε (closed form and exact), and DAPO's groups drawn per kept group.

    \b
    Examples:
      sigmaudit calc -p 0.05 -G 8
      sigmaudit calc -p 0.05 -p 0.3 -G 8 -G 64 -f json
    """
    from ...audits.calc import calc as run_calc

    emit_result(run_calc(p, G, eps), fmt, output)
