"""Benchmarks for evalstream: a case generator, baseline pipelines and a runner.

``python -m benchmarks generate|baseline|compare|check|run --help``
"""
