"""The CPU scan backend (:mod:`.cpu`); the GPU one is :mod:`swgpu_core.gpu.search`.

Which one runs is decided by :mod:`swgpu_core.engine`, the only place that knows both.
"""
