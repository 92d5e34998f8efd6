from tests.scheduler.fake_tools import fake_tools  # noqa: F401  (a fixture)
