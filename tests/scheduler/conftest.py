from tests.support.scheduler_tools import fake_tools  # noqa: F401  (a fixture)
