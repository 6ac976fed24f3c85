"""Apache Storm under streamband's control (000 §V, 001 §III): a ``storm.home`` built
from Maven Central, a cluster on the testbed's hosts, topologies pinned to a placement
and profiled by the engine itself."""
