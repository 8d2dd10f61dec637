"""Whole-project use cases on top of the others: set-up and demo, export, explore, operations."""
