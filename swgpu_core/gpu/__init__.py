"""Everything that runs on an NVIDIA GPU through CuPy, and nothing else.

Importing a module of this package imports CuPy; no other module of ``swgpu_core``
does so at import time. :mod:`.search` scans database chunks (inter/intra-task kernels,
planner, streaming), :mod:`.traceback` traces pairs, :mod:`.long_scan` runs the
align-long scan, :mod:`.kernels` and :mod:`.calibration` compile and time the scan
kernels. The CUDA sources are in ``swgpu_core/kernels/``.
"""
