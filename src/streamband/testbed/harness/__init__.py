"""The traffic harness: sender/receiver programs on the Mininet
hosts carrying 001's fork-join and 000's Trucking IoT pattern over real TCP, one
connection per flow, reporting the 5-metric tuple every half second."""
