from tests.retrieval.conftest import harness, make_harness  # noqa: F401  (shared fixtures)
