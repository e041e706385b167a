# Sourced by the device scripts after the wheels are installed: bytecode as an installation
# has it. The device sets PYTHONDONTWRITEBYTECODE and its CuPy, NumPy and SciPy were installed
# without .pyc files, so every process would compile the modules it imports again (0.4-0.7 s
# of each `swgpu` run, which no pip or conda installation pays). The bytecode goes to a cache
# beside the sources (PYTHONPYCACHEPREFIX), so nothing of the machine's own install changes;
# as that prefix replaces every __pycache__, the standard library is compiled into it too.
# pandas (and what it imports) is there for Snakemake, which imports it when it is installed,
# to compare the jobs' params (persistence._serialize_param_pandas): compiled on each import,
# it was 1.0 s of every workflow run's DAG building on the device (cProfile, 2026-11-26).
# The A/B trees in ab_*/ (device_check.sh ab, abfast) are compiled too: without it the old tree paid
# the compilation in every run (0.15-0.2 s), a bias in every A/B of start-up before 2026-11-26.
export PYTHONPYCACHEPREFIX=/tmp/pycache
python3 -m compileall -q -j 0 /tmp/site "$PWD/swgpu_core" $(for t in ab_*/swgpu_core; do [ -d "$t" ] && echo "$PWD/$t"; done) $(python3 -c "
import importlib.util as u
import sysconfig
print(sysconfig.get_paths()['stdlib'])  # the cache prefix hides the standard library's own .pyc files
for m in ('cupy', 'cupyx', 'cupy_backends', 'cuda', 'numpy', 'scipy', 'fastrlock', 'pandas', 'dateutil', 'pytz', 'tzdata', 'six'):
    s = u.find_spec(m)
    if s and s.submodule_search_locations:
        print(s.submodule_search_locations[0])
" 2> /dev/null) > /dev/null 2>&1 || true
