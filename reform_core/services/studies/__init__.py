"""Wording (WISE, human validation), constraint lists (MOSAIC) and benchmark construction."""
