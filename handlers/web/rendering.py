"""The inbox's Jinja2 environment, made when the first page is rendered: jinja2 (~5 MB of the
process's memory, bench/) is not loaded by a process whose inbox nobody opens."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from core.domain.visible import visible

if TYPE_CHECKING:
    import jinja2


class Templates:
    def __init__(self, assets: dict[str, str]) -> None:
        self.assets = assets  # each asset's URL, its version in the query (a page's `assets`)
        self._env: jinja2.Environment | None = None

    def env(self) -> jinja2.Environment:
        if self._env is None:
            import jinja2

            env = jinja2.Environment(
                # The answer controls are the kit's, shared with email's answer page.
                loader=jinja2.ChoiceLoader([jinja2.PackageLoader("handlers.web", "templates"),
                                            jinja2.PackageLoader("handlers.kit", "templates")]),
                autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                lstrip_blocks=True,
            )
            env.globals["assets"] = self.assets
            env.filters["visible"] = visible  # agent text shown where its raw value is also sent
            self._env = env
        return self._env

    def render(self, name: str, context: dict[str, Any], status: int = 200) -> web.Response:
        """The page `name` as an HTML response."""
        text = self.env().get_template(name).render(context)
        return web.Response(text=text, status=status, content_type="text/html", charset="utf-8")
