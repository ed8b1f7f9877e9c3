"""What every workload's kernels share: the numba decorators (:mod:`.jit`), user plug-ins
compiled into the kernels (:mod:`.plugins`, their numba types in :mod:`.plugin_types`),
numba's on-disk cache kept consistent with the source (:mod:`.numba_cache`), names a package
hands on without importing its kernels (:mod:`.lazy`) and a clean standard output
(:mod:`.stdio`). Nothing here is a model; the models are the other packages of ``workloads``."""
