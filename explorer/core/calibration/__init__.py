"""Calibrated kernel times: the achievable fraction of peak, a fixed latency per kernel and a saturating
efficiency curve in operation size, fitted to measured kernel times (``docs/device-file.md``, ``calibration:``).

Pure numpy (and scipy for the fit): no devices, no workloads. :mod:`.model` holds the parameters and the curve,
:mod:`.fit` fits them by least squares, :mod:`.measurements` reads the sourced measurement CSV
(``catalog/measurements/``).
"""
