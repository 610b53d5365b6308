"""Benchmarks, run side by side against a hand-written baseline (``nox -s bench``).

Never timed assertions in tests: each benchmark runs the harness and a minimal script that
makes the same Paddle calls, interleaved, and prints the ratio of their medians.
"""
