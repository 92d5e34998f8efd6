"""skillopt-sleep: a nightly sleep for coding agents."""

__version__ = "0.1.0"
