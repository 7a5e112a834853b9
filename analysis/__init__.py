"""Read testbed HDF5 results (one run or a sweep directory) and make paper figures and tables."""

from analysis.load import LoadError, MissingData, Run, Sweep, load, load_run, load_sweep

__all__ = ["LoadError", "MissingData", "Run", "Sweep", "load", "load_run", "load_sweep"]
