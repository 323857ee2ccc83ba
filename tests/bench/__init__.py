"""Smoke runs of the benchmarks in bench/, so they keep working."""
