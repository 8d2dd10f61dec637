"""Benchmark construction (seed 000 §3.3, App. A.7; seed 002 §4; seed 003 §3.1).

Pure modules, no ``db`` and no ``streamlit``:

``variants``     ReFormBench instruction variants: three constraints from distinct categories,
                 automated checks, target links, Table A11 multiplicities, difficulty screening,
                 single-constraint and prompted copies.
``mosaic_gen``   MOSAIC prompts: tasks × products × constraint lists, balanced subsets.
``wise_gen``     WISE matched items: task × target × wording form × repetition, manifests.
``prompts``      the LLM prompts of construction: constraint integration, open-ended feature
                 extraction, the meta-prompt of the prompting condition.
``extraction``   merge rule and LLM feature detections; map open-ended features to the catalog.
"""
