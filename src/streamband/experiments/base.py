"""What every reproduction module of :mod:`streamband.experiments` has.

A reproduction module (``paper000``, ``paper001``, ``paper002``, ``paper003``,
``paper004``, ``joint``, ``appfair``) holds, in this order:

- ``NAME`` (the ``streamband bench`` argument), ``TITLE`` and ``BACKENDS`` (the
  backends it runs on, the first being the default);
- ``PAPER``: the paper's reference figures, with the section they come from;
- the specs it runs (built-in spec names, or a function building them);
- ``run(out, opts, console) -> Outcome``: runs everything, prints the tables, writes
  ``out/results.json`` and ``out/report.html``;
- ``compare(rows, ...) -> Comparison``: the measured figures beside the paper's, and
  the checks. A check must be able to fail: ``streamband bench`` exits 1 when one does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from streamband.experiments.runner import Done
    from streamband.model.spec import ExperimentSpec
    from streamband.report.html import Report


@dataclass(frozen=True)
class Check:
    """One acceptance check: what is checked, what was measured, whether it holds."""

    what: str
    measured: str
    ok: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "ok", bool(self.ok))  # numpy's bool_ is not JSON's bool


@dataclass
class Comparison:
    """A bench's figures beside the paper's (``header`` + ``rows``) and its checks."""

    header: list[str]
    rows: list[list[Any]]
    checks: list[Check] = field(default_factory=list)
    title: str = "against the paper"
    legend: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # why flagged rows are off the paper

    @property
    def ok(self) -> bool:
        """Every check holds, and there is one at least (a bench that checks nothing
        has shown nothing)."""
        return bool(self.checks) and all(c.ok for c in self.checks)

    def as_json(self) -> dict[str, Any]:
        return {"title": self.title, "header": self.header, "rows": self.rows,
                "checks": [asdict(c) for c in self.checks], "legend": self.legend,
                "notes": self.notes}


@dataclass(frozen=True)
class Options:
    """The options of ``streamband bench`` every reproduction understands.

    ``backend``: where it runs (``sim``, ``testbed``, ``storm``); ``seconds``: the
    length of each run (``None``: the spec's or the module's default); ``repeat``:
    runs per configuration on noisy backends (median and spread reported);
    ``full_trace`` (paper-004): the whole trace everywhere; ``policy``: the managed
    policy under test in place of the module's default (to check that checks fail);
    ``guard``: on a real backend, keep TCP's split unless an allocation moves enough
    bandwidth to pay for metering it (:mod:`streamband.loop.guard`; ``None``: the
    backend's default); ``max_pending`` (storm): Storm's ``topology.max.spout.pending``,
    the tuples a spout task may have in flight (0: the spouts paced open loop; ``None``:
    the backend's default); ``tuple_scale`` (storm): run the spec at ``1/S`` of its
    tuples, each ``S`` times the bytes (``None``: the bench's default); ``source``
    (storm): the topologies' sources, their own paced spouts (``spout``) or Kafka topics
    a paced producer fills (``kafka``; ``None``: spouts); ``guarantee`` (storm, kafka):
    ``at-most-once`` (acking off) or ``at-least-once``; ``alignment_ms`` (flink): Flink's
    watermark alignment (FLIP-217), a source this far ahead of the slowest pauses (0 or
    ``None``: off); ``enforce`` (storm, flink): the rates as OpenFlow meters (``meter``,
    the default) or per-flow rate classes on the switch egress ports (``shaper``); ``dt``
    (testbed, storm, flink): Δt of the manager loop, s (``None``: the runner's 1 s).
    """

    backend: str = "sim"
    seconds: float | None = None
    repeat: int = 1
    full_trace: bool = False
    policy: str | None = None
    guard: bool | None = None
    max_pending: int | None = None
    tuple_scale: float | None = None
    source: str | None = None
    guarantee: str | None = None
    alignment_ms: float | None = None
    enforce: str | None = None
    dt: float | None = None

    def engine(self) -> dict[str, Any]:
        """A real backend's runner settings given here (the others: its defaults)."""
        given = {"guard": self.guard, "max_pending": self.max_pending,
                 "tuple_scale": self.tuple_scale, "source": self.source,
                 "guarantee": self.guarantee, "alignment_ms": self.alignment_ms,
                 "enforce": self.enforce, "dt": self.dt}
        return {k: v for k, v in given.items() if v is not None}

    def alignment_note(self) -> str:
        """``, watermark alignment (FLIP-217) at N ms`` when Flink's is on, else ''."""
        return (f", watermark alignment (FLIP-217) at {self.alignment_ms:g} ms"
                if self.alignment_ms else "")

    def under_test(self, table: dict[str, str]) -> str:
        """The managed policy this run tests: ``policy`` if given, else the experiment's
        choice for the backend (its ``UNDER_TEST`` table, which says why)."""
        return self.policy or table[self.backend]


@dataclass
class Outcome:
    """What ``run`` returns: every run's row, the comparison and the files written."""

    rows: list[dict[str, Any]]
    comparison: Comparison
    results: Path
    report: Path

    @property
    def ok(self) -> bool:
        return self.comparison.ok


#: a row is flagged when the measured figure is more than this factor off the paper's
FLAG_FACTOR = 2.0


def spread(values: Sequence[float]) -> str:
    """"min-max" of repeated measurements (one decimal), "" when there are none.

    Examples
    --------
    >>> spread([51.0, 72.04, 64.0])
    '51.0-72.0'
    """
    return f"{min(values):.1f}-{max(values):.1f}" if len(values) else ""


def distance(measured: float, paper: float) -> tuple[float, bool]:
    """``measured - paper`` and whether the row is more than 2x off the paper
    (ratio above 2 or below 1/2, or of the other sign).

    Examples
    --------
    >>> distance(35.4, 25.0)
    (10.399999999999999, False)
    >>> distance(35.5, 15.0)[1]
    True
    """
    if not (math.isfinite(measured) and math.isfinite(paper)) or paper == 0:
        return math.nan, False
    ratio = measured / paper
    return measured - paper, not (1.0 / FLAG_FACTOR <= ratio <= FLAG_FACTOR)


def _cells(rows: list[list[Any]]) -> list[list[Any]]:
    return [[round(v, 2) if isinstance(v, float) else v for v in r] for r in rows]


def show(comparison: Comparison, console: Console) -> None:
    """Print the comparison and its checks."""
    t = Table(title=comparison.title)
    for h in comparison.header:
        t.add_column(h, justify="right")
    for r in _cells(comparison.rows):
        t.add_row(*("-" if v is None or (isinstance(v, float) and math.isnan(v))
                    else f"{v:g}" if isinstance(v, float) else str(v) for v in r))
    console.print(t)
    for note in comparison.notes:
        console.print(f"note: {note}")
    c = Table(title="checks")
    for col in ("check", "measured", "ok"):
        c.add_column(col)
    for ch in comparison.checks:
        c.add_row(ch.what, ch.measured, "yes" if ch.ok else "[bold red]NO[/]")
    console.print(c)
    failed = sum(not ch.ok for ch in comparison.checks)
    console.print(f"{len(comparison.checks) - failed} of {len(comparison.checks)} checks hold"
                  + (f"; {failed} FAILED" if failed else ""))


def publish(out: Path, title: str, done: list[Done], comparison: Comparison,
            console: Console, intro: list[str] | None = None,
            extra: dict[str, Any] | None = None,
            figures: Callable[[Report], None] | None = None) -> Outcome:
    """Print the runs and the comparison; write ``results.json`` (runs, spec,
    comparison, checks) and ``report.html`` (tables with legends, plots, checks)."""
    from streamband.experiments.runner import write_outputs

    report = write_outputs(out, title, done, console,
                           extra={"comparison": comparison.as_json(), **(extra or {})},
                           intro=intro)
    report.heading(comparison.title.capitalize())
    report.table(comparison.header, _cells(comparison.rows), legend=comparison.legend)
    for note in comparison.notes:
        report.para(note)
    if figures is not None:
        figures(report)
    report.heading("Checks")
    report.table(["check", "measured", "ok"],
                 [[c.what, c.measured, c.ok] for c in comparison.checks])
    show(comparison, console)
    path = report.write()
    console.print(f"results: {out / 'results.json'}\nreport:  {path}")
    rows = [r for d in done for r in d.rows]
    return Outcome(rows, comparison, out / "results.json", path)


def with_options(spec: ExperimentSpec, opts: Options, under_test: str = "appaware"
                 ) -> ExperimentSpec:
    """``spec`` with ``opts.seconds`` as each run's length (warm-up and Δt shrunk to fit)
    and ``opts.policy`` in place of the policy ``under_test``, validated again."""
    from streamband.model.spec import parse_spec

    data = spec.model_dump(mode="json", exclude_unset=True)
    if opts.seconds is not None:
        sim = spec.sim
        interval = min(sim.interval_s, opts.seconds / 4)
        data["sim"] = {**data.get("sim", {}), "duration_s": opts.seconds,
                       "warmup_s": min(sim.warmup_s, opts.seconds / 3), "interval_s": interval,
                       "sample_s": min(sim.sample_s, interval)}
        data["sweep"] = {**data.get("sweep", {}),
                         "duration_s": min(spec.sweep.duration_s, opts.seconds)}
    if opts.policy is not None:
        data["policies"] = list(dict.fromkeys(
            opts.policy if p == under_test else p for p in spec.policies))
    return parse_spec(data, f"{spec.source or spec.experiment} (with the bench's options)"
                      ).from_source(spec.source)
