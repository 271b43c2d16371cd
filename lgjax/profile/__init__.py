"""One encoding through every study's instruments, beside the canonical ones.

instruments (each study's measurement for one encoding), recipes (quick / default / full),
reference (the canonical encodings' numbers, shipped as reference.json), card (profile.md,
profile.html, profile.json), command (`lgjax profile ENCODING`).
"""
