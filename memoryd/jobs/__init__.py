"""Background jobs: one module per job, a report of what each run changed, the scheduler."""
