"""The test suite: a package, so that its modules (tests.faulty_workload, tests.naive_*) are found
before any distribution's top-level ``tests`` package (evalys installs one)."""
