"""Benchmark construction (ReFormBench, arXiv:2610.19693, §3.3, App. A.7; the WISE paper,
*When Verifiable Counts Depend on Wording*, §4; MOSAIC, arXiv:2601.18554, §3.1).

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
