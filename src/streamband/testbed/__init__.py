"""The emulated testbed on one machine: Mininet hosts, Open vSwitch with the
userspace datapath (OpenFlow 1.3, meters), HTB-shaped links, the controller of
:mod:`streamband.sdn`, and clean-up as a first-class command (Mininet's style)."""
