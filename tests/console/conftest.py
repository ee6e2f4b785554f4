from support.browser import console_browser  # noqa: F401 (a fixture)
