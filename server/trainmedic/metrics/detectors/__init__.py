"""Numeric symptoms in metric series: shapes a regex cannot see, as evidence like any other.

One module per detector, each a `Detector` subclass that declares its NAME, what it MEANS, the
sample values it READS, the METRIC its anomalies are plotted on and its DEFAULTS; `registry`
lists them. A rule names a detector in its YAML
(`detectors: [{name: scale-collapse, weight: 0.8, params: {min_decreases: 6}}]`).
"""
