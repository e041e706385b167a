"""Everything that runs on an NVIDIA GPU through CuPy, and nothing else.

Importing a module of this package imports CuPy but asks the device nothing; whether a
GPU is usable is decided once, by :mod:`swgpu_core.engine`, whose CUDA engine is the only
caller of this package. No other module of ``swgpu_core`` imports CuPy at import time.
:mod:`.device` reads a device's geometry, :mod:`.search` scans database chunks
(inter/intra-task kernels, planner, streaming), :mod:`.traceback` traces pairs,
:mod:`.long_scan` runs the align-long scan, :mod:`.kernels` and :mod:`.calibration`
compile and time the scan kernels. The CUDA sources are in ``swgpu_core/kernels/``, their
shared constants in :mod:`swgpu_core.kernel_abi`.
"""
