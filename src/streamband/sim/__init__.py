"""Simulators: the fluid stream-application simulator and the coflow simulator of 004."""
