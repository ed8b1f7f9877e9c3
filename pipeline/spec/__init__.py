"""What a sweep is: its spec, published references, run-time estimates, traces and limits."""
