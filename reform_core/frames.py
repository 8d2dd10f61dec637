"""Column contracts of the long DataFrames the pure core exchanges.

Every pure function in ``reform_core`` takes and returns pandas DataFrames whose
columns are named here. Functions accept keyword arguments to rename a column role,
but these are the defaults that services, the simulator and the exports produce.

INSTANCES — one row per judged (response, constraint) pair, i.e. per
(model, instruction, position). The unit of labels, calibration and scores.

    iid               int    unique instance id (stable: derived from response and constraint ids)
    model             str    evaluated model name
    question          str    question key
    instruction       str    instruction (variant) key
    condition         str    "main" | "single" | "prompted" (or any condition label)
    pair_group        str    groups an instruction with its single-constraint versions
                             (equal to the main instruction key; may be empty)
    task_type         str    task type of the question
    domain            str    domain of the question
    position          int    constraint position 1..3 within the instruction
    feature           str    catalog feature key
    category          str    catalog category of the feature
    mode              str    "require" | "forbid"
    baseline_opposed  bool   target opposes the model's baseline; <NA> = unknown (no baseline
                             annotation): left out of EMCR and counted
                             (docs/metrics.md#targets-and-baseline-opposition, #missing-data)
    label_<judge>     float  judge label 1.0 pass / 0.0 fail / NaN missing or error
    p                 float  calibrated pass probability (or a binary label) in [0, 1]

ADJUDICATIONS — the current (not superseded) human decision per instance.

    iid               int    instance id
    a                 float  1.0 pass / 0.0 fail (rows with no usable label are dropped)
    annotator         str    who decided (optional)

DISAGREEMENTS — instances where the two judges of a pair differ (docs/metrics.md#disagreements-and-strata).

    iid, model, category, mode   as above
    direction         str    "A1B0" (judge A pass, B fail) | "A0B1"
    stratum           str    f"{model}|{direction}|{category}|{mode}" for the main condition,
                             f"{model}|{direction}|{category}|{mode}|{condition}" for any other: each
                             condition is calibrated and sampled from its own strata (issue 17)
    condition         str    the instance's condition (when the INSTANCES frame has one)

BASELINE — one row per (model, question, feature) present in the baseline response.

    model, question, feature
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

INSTANCE_KEY = "iid"
# iid of a stored (response, constraint) pair = response_id * IID_SHIFT + constraint_id.
IID_SHIFT = 1 << 32
STRATUM_COLUMNS = ("model", "direction", "category", "mode")
MODES = ("require", "forbid")
CONDITION_MAIN = "main"


def stratum_key(model: str, direction: str, category: str, mode: str, condition: str = CONDITION_MAIN) -> str:
    """The string id of one adjudication stratum (docs/metrics.md#disagreements-and-strata).
    The main condition's keys are ``model|direction|category|mode``; another condition's carry
    it as a fifth part, so its disagreements are never pooled with the main ones."""
    key = f"{model}|{direction}|{category}|{mode}"
    return key if condition in (None, "", CONDITION_MAIN) else f"{key}|{condition}"


def condition_suffix(conditions) -> np.ndarray:
    """``""`` for main-condition rows, ``"|<condition>"`` otherwise (vectorised :func:`stratum_key`)."""
    import numpy as np

    c = np.asarray(conditions, dtype=object).astype(str)
    return np.where((c == CONDITION_MAIN) | (c == "") | (c == "None"), "", "|" + c).astype(object)


def require_columns(df, columns, what: str) -> None:
    """ValueError naming the missing columns of ``df`` (``what`` names the frame)."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; has {list(df.columns)}")
