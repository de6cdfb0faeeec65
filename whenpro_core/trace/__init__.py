"""The trace model and its labels: steps, agents, step coordinates, ground truth, the failure-mode
taxonomy and per-step usage."""
