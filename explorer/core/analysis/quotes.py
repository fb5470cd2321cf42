"""The one quote store (issue 23): purchase and rent quotes live in the requirements (``price``,
``cloud_price``, with ``price_source`` and ``cloud_price_source``), saved with the project; the cost panel, the
planner, the report and the CLI all read and write them here, so a quote typed anywhere is seen everywhere, and
editing a device (its TDP, its memory) keeps its quote, which is keyed by the device id, not stored in the device.
"""

from __future__ import annotations

from dataclasses import replace

from .evaluate import ModelAnalysis
from .procurement import Requirements, _with_quotes

_UNSET = object()


def apply_quotes(analysis: ModelAnalysis, requirements: Requirements) -> ModelAnalysis:
    """``analysis`` with the quotes of ``requirements`` in place of the catalog's prices; quotes for devices the
    analysis does not hold (deselected since) are kept in the store and ignored here."""
    ids = set(analysis.devices.ids)
    req = replace(requirements, price={k: v for k, v in requirements.price.items() if k in ids},
                  cloud_price={k: v for k, v in requirements.cloud_price.items() if k in ids})
    return _with_quotes(analysis, req)


def set_quote(requirements: Requirements, device_id: str, *, price=_UNSET, cloud_price=_UNSET,
              source: str = "") -> Requirements:
    """``requirements`` with one device's purchase quote (USD) and/or rent quote (USD/s) set, or removed with
    ``None`` (the catalog's price applies again); ``source`` (who quoted, and when) is kept beside each."""
    out = requirements
    for name, value in (("price", price), ("cloud_price", cloud_price)):
        if value is _UNSET:
            continue
        quotes, notes = dict(getattr(out, name)), dict(getattr(out, f"{name}_source"))
        if value is None:
            quotes.pop(device_id, None)
            notes.pop(device_id, None)
        else:
            quotes[device_id] = value
            if source:
                notes[device_id] = source
            else:
                notes.pop(device_id, None)
        out = replace(out, **{name: quotes, f"{name}_source": notes})
    return out
