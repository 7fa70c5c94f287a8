"""Where grades go after `grader grade`: Gradescope, GitHub Actions, the nbgrader gradebook."""
