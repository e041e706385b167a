"""``swgpu align-long``: one huge local alignment (a long query against one long target).

The scan (GPU kernel ``kernels/sw_long.cu`` or the numba reference :mod:`.cpu_scan`) finds
the best end point of every diagonal band (:mod:`.endpoints`), optionally section by
section (:mod:`.sections`); the best distinct end points are then traced back over only
the cells they need (:mod:`.trace`). ``docs/align_long.md`` specifies the rule.
"""
