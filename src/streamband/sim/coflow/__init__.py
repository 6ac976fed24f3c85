"""Coflow scheduling of paper 004 (Stream): event-driven flow-level simulator and schedulers."""
