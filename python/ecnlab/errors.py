"""The exception hierarchy that every ecnlab error maps to (the Rust side raises these classes)."""


class EcnlabError(Exception):
    """Base of every ecnlab error: I/O failures and anything not more specific."""


class ConfigError(EcnlabError, ValueError):
    """Bad input: `field` is the path the Rust validation names (`topology.rate`, `workloads.0.dst`)."""

    def __init__(self, message, field=None):
        super().__init__(message)
        self.field = field

    def __reduce__(self):  # keeps `field` across process pools and Ray
        return (type(self), (str(self), self.field))


class RunError(EcnlabError, RuntimeError):
    """A run stopped before completing (event budget, conservation violated) or a worker failed."""
