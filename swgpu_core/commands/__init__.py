"""Subcommands of the ``swgpu`` CLI, one module each (see :mod:`swgpu_core.cli`).

:data:`GPU_COMMANDS` names the commands that may use a GPU in their own process (each calls
``_options.start_gpu`` first thing): for them ``swgpu`` starts CUDA's driver initialisation
before it even parses the arguments (:mod:`swgpu_core.cuda_driver`). Not for the others:
``gpu-run`` hands a GPU to the command it turns into, and a driver initialised in it would
only compete with that command's (and with the other jobs' starting beside it).
``tests/test_engine.py`` keeps this set and the modules in step.
"""

GPU_COMMANDS = frozenset({"search", "align", "pairs", "align-long"})
