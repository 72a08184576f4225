"""ecnlab from Python: run and sweep scenarios, reproduce experiments, plot and report (polars frames)."""

from .core import Result, experiments, load_run, resolve, run, scenarios, thresholds, to_parquet
from .errors import ConfigError, EcnlabError, RunError
from .repro import Reproduction, reproduce
from .sweep import busiest_port, sweep

__version__ = "0.1.0"

__all__ = [
    "ConfigError", "EcnlabError", "Reproduction", "Result", "RunError", "busiest_port", "experiments", "load_run",
    "reproduce", "resolve", "run", "scenarios", "sweep", "thresholds", "to_parquet",
]
