"""Token prices for cost accounting, configurable.

Prices are USD per million tokens ``(input, output)``. The defaults are list prices as
published by the providers when this table was written — check them and override with
``REFORM_JUDGE_PRICES`` (a JSON object ``{"model": [input, output], ...}``) or the
``prices`` argument. Batch APIs bill half (:data:`BATCH_DISCOUNT`). A model missing from
the table costs 0.0 (:func:`known` tells whether a price exists).
"""

from __future__ import annotations

import json
import os
from typing import Mapping, Optional

DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gemini-2.5-pro": (1.25, 10.00),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.0-flash": (0.10, 0.40),
}
BATCH_DISCOUNT = 0.5
ENV_VAR = "REFORM_JUDGE_PRICES"


def price_table(prices: Optional[Mapping[str, tuple[float, float]]] = None) -> dict[str, tuple[float, float]]:
    """Defaults, overridden by ``$REFORM_JUDGE_PRICES``, overridden by ``prices``."""
    table = dict(DEFAULT_PRICES)
    env = os.environ.get(ENV_VAR)
    if env:
        try:
            loaded = json.loads(env)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{ENV_VAR}: not valid JSON ({exc})") from None
        table.update(_validated(loaded, ENV_VAR))
    if prices:
        table.update(_validated(prices, "prices"))
    return table


def _validated(prices: Mapping, where: str) -> dict[str, tuple[float, float]]:
    out = {}
    for model, pair in dict(prices).items():
        try:
            inp, outp = (float(x) for x in pair)
        except (TypeError, ValueError):
            raise ValueError(
                f"{where}: price of {model!r} must be [input, output] USD per 1M tokens, got {pair!r}"
            ) from None
        if inp < 0 or outp < 0:
            raise ValueError(f"{where}: price of {model!r} must not be negative")
        out[str(model)] = (inp, outp)
    return out


def known(model: str, prices: Optional[Mapping] = None) -> bool:
    return model in price_table(prices)


def cost_usd(
    model: str, input_tokens: int, output_tokens: int, *, prices: Optional[Mapping] = None, batch: bool = False
) -> float:
    """Cost of one call in USD (0.0 for a model without a price)."""
    table = price_table(prices)
    if model not in table:
        return 0.0
    inp, outp = table[model]
    cost = (input_tokens * inp + output_tokens * outp) / 1_000_000
    return cost * (BATCH_DISCOUNT if batch else 1.0)
