"""The harness: the study interface and run_study, the command list, cli, launch, bench, outputs."""
