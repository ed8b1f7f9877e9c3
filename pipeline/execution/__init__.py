"""Running a sweep: pilot, tasks, executors (local, Dask, Slurm), child processes, sizing."""
