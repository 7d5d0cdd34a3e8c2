"""Who a checked sign-in is, as a responder: `slack:<member id>` for a member of aye's own
workspace (or of `[slack] teams`), `github:<login>`, `email:<address>` (lowercased) when the
organisation's provider has verified it. Anything else signs nobody in."""

from __future__ import annotations

from typing import Any

from core.domain.kinds import EMAIL_KIND
from core.domain.responders import Responder
from handlers.web.oauth import REFUSED, Refused
from handlers.web.providers import GITHUB, SLACK, SLACK_TEAM_CLAIM, SLACK_USER_CLAIM, Provider

# A session's identity column holds 120 characters (store/models.py SessionRow).
MAX_IDENTITY = 120


def identity_of(provider: Provider, claims: dict[str, Any]) -> str:
    """The identity `claims` (an ID token's, or GitHub's user) make known; Refused otherwise."""
    if provider.name == SLACK:
        team = claims.get(SLACK_TEAM_CLAIM)
        teams = provider.teams() if provider.teams is not None else frozenset()
        # Fail closed: while aye's own team is not known yet (auth.test), nobody is a member.
        if not isinstance(team, str) or team not in teams:
            raise Refused("team", "another workspace's member")
        return _responder(SLACK, claims.get(SLACK_USER_CLAIM))
    if provider.name == GITHUB:
        return _responder(GITHUB, claims.get("login"))
    # The organisation's provider: an address it has not verified could be anyone's.
    if claims.get("email_verified") is not True:
        raise Refused("unverified", "email_verified is not true")
    email = claims.get("email")
    if isinstance(email, str) and len(email) > MAX_IDENTITY - len(EMAIL_KIND) - 1:
        raise Refused(REFUSED, "an email address longer than a session holds")
    return _responder(EMAIL_KIND, email.lower() if isinstance(email, str) else None)


def _responder(kind: str, ident: Any) -> str:
    """`kind:ident` when it is a valid identity of that kind (as answers check it)."""
    if not isinstance(ident, str) or not ident:
        raise Refused(REFUSED, f"no {kind} identity in the claims")
    try:
        return str(Responder.parse(f"{kind}:{ident}"))
    except ValueError:
        raise Refused(REFUSED, f"not a {kind} identity") from None
