"""streamband: application-aware bandwidth management for distributed stream analytics."""

__version__ = "0.1.0"
