"""The interval frame carries the default estimator's estimate in ``attrs`` (the Scores page reads
its adjudicator-error-aware verdict from it). pandas deep-copies ``attrs`` into everything an
operation returns; the estimate must be shared, not copied (issue 16: at 10× each column read of the
interval frame copied ~350 MB)."""

import copy

import numpy as np
import pandas as pd

from reform_core.services.project.explore import Shared


class Big:
    def __init__(self):
        self.arrays = [np.zeros(10)]

    def __deepcopy__(self, memo):  # would be the expensive path
        raise AssertionError("the estimate was deep-copied")


def test_shared_value_survives_pandas_operations_uncopied():
    value = Big()
    ci = pd.DataFrame({"model": ["a", "b"], "metric": ["tcpr", "tcpr"], "measurement_lo": [1.0, 2.0]})
    ci.attrs["estimate"] = Shared(value)
    col = ci["model"]
    sub = ci[ci["metric"] == "tcpr"].reset_index(drop=True)
    for frame in (col, sub, ci.copy(), copy.deepcopy(ci)):
        assert frame.attrs["estimate"].value is value
