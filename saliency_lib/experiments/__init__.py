"""Experiments: the study's catalogue, profiles, units, executors and result store.

This layer sits on top of agents, explainers and metrics and below the book; it never
imports the book's code.
"""
