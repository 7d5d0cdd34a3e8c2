"""The pieces the surfaces' web pages share (the inbox's, handlers/web, and email's answer page,
handlers/email): what an ask shows (cards.py), its form's fields and what a posted form gives
(fields.py), the security headers and a bounded form body (forms.py), and the answer controls'
template (templates/controls.html). One way to show and read an ask on a page, owned by no
surface, so no surface imports another."""
