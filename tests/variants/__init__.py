"""Correct but different formulations of the solutions: `grader validate` proves each passes every graded test."""
