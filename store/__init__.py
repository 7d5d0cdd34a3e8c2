
from sqlalchemy.orm import configure_mappers

from store import models as _models  # noqa: F401  (the tables, before their mappers are set up)

# Rows are built with model_construct from query results; their attributes work only once the
# mappers are configured, which would otherwise wait for the first ORM-style query.
configure_mappers()
