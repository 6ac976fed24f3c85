"""The emulated testbed on one machine: Mininet hosts, Open vSwitch with the
userspace datapath (OpenFlow 1.3, meters), HTB-shaped links, the controller of
:mod:`streamband.sdn`, and clean-up as a first-class command (Mininet's style).

Division of labour: :mod:`.spec` says what to build (a network spec plus the control
plane); :mod:`.network` builds and stops it (:class:`~.network.Testbed`); :mod:`.ovs`
drives Open vSwitch; :mod:`.registry` marks what the project starts and
:mod:`.clean` removes it after any crash; :mod:`.harness` is the traffic workload (an
application's DAG as sender/receiver processes in the hosts); :mod:`.selftest`
measures the data plane. Running an experiment on it is
:mod:`streamband.backends.testbed`'s job; deciding rates is :mod:`streamband.alloc`'s.
"""
