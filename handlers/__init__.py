"""The surfaces where people answer, one folder each (slack/, github/), each plugging in
through its `PLUGIN` (see core.app.service.SurfacePlugin)."""
