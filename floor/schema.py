"""How the API docs (/api/docs/, Swagger UI's "Authorize") describe the two ways in: the
browser's session and a tablet's token. drf-spectacular's own descriptions name a cookie to
paste (Django's session cookie is HttpOnly: no page can read it, and a browser sends it by
itself) and a "required prefix" without saying where the token comes from. Registered by
FloorConfig.ready()."""

from drf_spectacular.authentication import SessionScheme, TokenScheme


class StaffSessionScheme(SessionScheme):
    target_class = "rest_framework.authentication.SessionAuthentication"
    priority = 1

    def get_security_definition(self, auto_schema):
        return {
            **super().get_security_definition(auto_schema),
            "description": "The browser's session: log in at `/accounts/login/` and this page's requests "
            "carry it (with their CSRF token) by themselves. Nothing to enter here.",
        }


class ApiTokenScheme(TokenScheme):
    target_class = "floor.authentication.TokenAuthentication"
    priority = 1

    def get_security_definition(self, auto_schema):
        return {
            **super().get_security_definition(auto_schema),
            "description": "A tablet's token: `POST /api/auth/token/` with the username and password "
            "answers `token`; enter the word `Token`, a space and the token (`Token 9944b09199c6...`). "
            "The token alone is not read (401 `not_authenticated` once the browser's session is gone). "
            "It lasts a shift (`API_TOKEN_HOURS`, 12 unless set); `POST /api/auth/logout/` revokes it.",
        }
