"""The history of the memories beyond their files: the root as a git repository."""
