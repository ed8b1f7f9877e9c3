"""The asv benchmark suite (``asv.conf.json``'s ``benchmark_dir``); benchmarks/README.md says how to run it."""
