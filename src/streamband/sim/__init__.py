"""Simulators: the data planes that stand in for engine and network.

Division of labour: :mod:`.fluid` simulates a stream application on a network
(queues, operators, max-min sharing under caps) and knows nothing of policies;
:mod:`streamband.backends.sim` attaches the manager loop to it. :mod:`.coflow`
is the event-driven flow-level simulator of 004 with its schedulers (its engine
decides nothing: a scheduler sets priorities, the engine shares bandwidth).
"""
