"""The job table and the triggers that say when a job runs: what the config, the
scheduler and memoryctl read, importing nothing of the jobs themselves."""
