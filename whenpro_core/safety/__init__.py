"""Showing untrusted text inert and keeping credentials out of everything whenpro prints, logs or saves."""
