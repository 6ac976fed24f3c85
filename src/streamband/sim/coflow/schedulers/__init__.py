"""Coflow schedulers of 004 §IV-B, one small class each over :mod:`..engine`."""
