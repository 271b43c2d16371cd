"""`lgjax bench`: the speed of the training step and of the studies' workloads (command), and
where the Table-1 workload's wall time goes besides its arithmetic (fixed_costs). It sits above
the studies, whose workloads it times."""
