"""Apache Flink under streamband's control (issue 34): a Flink home built from Maven
Central, a standalone session cluster on the testbed's hosts (a JobManager, a
TaskManager per worker host or per slot), jobs placed by slot-sharing groups, and a
metrics reporter plug-in whose reports give each TaskManager-pair flow its state."""
