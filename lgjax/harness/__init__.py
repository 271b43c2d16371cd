"""The harness: the study interface and run_study, how a study declares itself, outputs; it
imports no study. Its entry points (the command table, cli, launch) sit above every layer."""
