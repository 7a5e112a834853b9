"""pytest suite for the analysis package (builds its own small HDF5 files with h5py)."""
