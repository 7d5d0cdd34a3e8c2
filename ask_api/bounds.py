"""The bounds the `/v1` routes hold their query parameters to (ask_api/routes.py), which the
OpenAPI document states (ask_api/openapi.py): one place for both."""

MAX_WAIT_S = 300  # a long poll's `timeout`, in whole seconds
DEFAULT_WAIT_S = 30
DEFAULT_LIMIT = 50  # asks a page
MAX_LIMIT = 200
