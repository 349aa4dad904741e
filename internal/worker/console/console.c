/* console.c - who is asking, and the pages (console.h). */
#include "console.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"
#include "api.h"
#include "assets.h"
#include "log.h"
#include "sessions.h"
#include "token.h"
#include "users.h"

#define COOKIE	"dlq_session"
#define CSP	"default-src 'none'; script-src 'self'; style-src 'self'; " \
	"img-src 'self'; connect-src 'self'; form-action 'self'; " \
	"frame-ancestors 'none'; base-uri 'none'"

struct dlq_console {
	const struct dlq_config	*cfg;
	struct dlq_users	*users;		/* NULL: no tokens file */
	struct dlq_sessions	*sessions;
	struct dlq_api		*api;
	char			 secret[65];	/* for proxy users' CSRF */
	bool			 secure;	/* cookies only over https */
};

/* How the caller proved who they are. */
enum via { VIA_NONE, VIA_TOKEN, VIA_SESSION, VIA_PROXY };

struct dlq_console *
dlq_console_new(const struct dlq_config *c, struct dlq_archive *archive,
    char *why, size_t n)
{
	struct dlq_console *con = calloc(1, sizeof(*con));

	if (con == NULL || !dlq_random_hex(con->secret, 32)) {
		snprintf(why, n, "out of memory or random bytes");
		free(con);
		return NULL;
	}
	con->cfg = c;
	con->secure = c->console_public_url != NULL &&
	    strncmp(c->console_public_url, "https://", 8) == 0;
	if (c->console_tokens_file != NULL && (con->users =
	    dlq_users_load(c->console_tokens_file, why, n)) == NULL) {
		free(con);
		return NULL;
	}
	if ((con->sessions = dlq_sessions_new(c->console_session_ms)) == NULL ||
	    (con->api = dlq_api_new(c, archive)) == NULL) {
		snprintf(why, n, "out of memory");
		dlq_console_free(con);
		return NULL;
	}
	return con;
}

void
dlq_console_free(struct dlq_console *con)
{
	if (con == NULL)
		return;
	dlq_api_free(con->api);
	dlq_sessions_free(con->sessions);
	dlq_users_free(con->users);
	free(con);
}

static bool
prefixed(const char *url, const char *p)
{
	return strncmp(url, p, strlen(p)) == 0;
}

bool
dlq_console_serves(const char *url)
{
	return prefixed(url, "/ops/") || prefixed(url, "/api/") ||
	    strcmp(url, "/login") == 0 || strcmp(url, "/logout") == 0 ||
	    prefixed(url, "/static/");
}

static void
asset(struct dlq_console_res *res, const char *name)
{
	const struct dlq_asset *a = dlq_asset_find(name);

	if (a == NULL) {
		res->status = 404;
		res->type = "text/plain; charset=utf-8";
		dlq_buf_adds(res->body, "not found\n");
		return;
	}
	res->status = 200;
	res->type = dlq_asset_type(name);
	res->fixed = a->data;
	res->fixed_len = a->len;
}

static void
redirect(struct dlq_console_res *res, const char *to)
{
	res->status = 303;
	res->type = "text/plain; charset=utf-8";
	dlq_console_header(res, "Location", to);
	dlq_buf_printf(res->body, "see %s\n", to);
}


static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The value of `key` in a form body (application/x-www-form-urlencoded),
 * decoded into out[n]; false when absent or too long. */
static bool
form_value(const char *body, size_t len, const char *key, char *out,
    size_t n)
{
	size_t klen = strlen(key), i = 0, o = 0;
	const char *p = body, *end = body + len;
	int hi, lo;

	while (p < end) {
		if ((size_t)(end - p) > klen && strncmp(p, key, klen) == 0 &&
		    p[klen] == '=') {
			for (i = 0, p += klen + 1; p + i < end && p[i] != '&';
			    i++) {
				if (o + 1 >= n)
					return false;
				if (p[i] == '+')
					out[o++] = ' ';
				else if (p[i] == '%' && p + i + 2 < end &&
				    (hi = hexval(p[i + 1])) >= 0 &&
				    (lo = hexval(p[i + 2])) >= 0) {
					out[o++] = (char)(hi << 4 | lo);
					i += 2;
				} else
					out[o++] = p[i];
			}
			out[o] = '\0';
			return memchr(out, '\0', o) == NULL;
		}
		if ((p = memchr(p, '&', (size_t)(end - p))) == NULL)
			break;
		p++;
	}
	return false;
}

static void
login_page(struct dlq_console_res *res, unsigned status)
{
	asset(res, "login.html");
	res->status = status;
}

static void
session_cookie(struct dlq_console *con, struct dlq_console_res *res,
    const char *id, int64_t max_age_s)
{
	char v[192];

	snprintf(v, sizeof(v), COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict;"
	    " Max-Age=%lld%s", id, (long long)max_age_s, con->secure ?
	    "; Secure" : "");
	dlq_console_header(res, "Set-Cookie", v);
}

/* POST /login, token=...: a session, or the form again. Failures count
 * against the address, and none is logged with what was typed. */
static void
login(struct dlq_console *con, const struct dlq_console_req *q,
    struct dlq_console_res *res)
{
	struct dlq_console_user u;
	const struct dlq_session *s;
	char token[256], retry[24];
	int64_t now = dlq_wall_ms(), wait_s;

	if (!dlq_login_allowed(con->sessions, q->peer, now, &wait_s)) {
		snprintf(retry, sizeof(retry), "%lld", (long long)wait_s);
		dlq_console_header(res, "Retry-After", retry);
		login_page(res, 429);
		return;
	}
	if (con->users != NULL)
		dlq_users_refresh(con->users);
	if (q->body_too_large || !form_value(q->body ? q->body : "",
	    q->body_len, "token", token, sizeof(token)) || con->users == NULL ||
	    !dlq_users_by_token(con->users, token, strlen(token), &u)) {
		dlq_login_failed(con->sessions, q->peer, now);
		dlq_log(DLQ_LOG_WARN, "console_login_failed", "peer", q->peer,
		    NULL);
		login_page(res, 401);
		return;
	}
	if ((s = dlq_sessions_open(con->sessions, &u, now)) == NULL) {
		dlq_console_error(res, 503, "error",
		    "no random bytes for a session");
		return;
	}
	session_cookie(con, res, s->id, con->cfg->console_session_ms / 1000);
	dlq_log(DLQ_LOG_INFO, "console_login", "user", u.name, "role",
	    dlq_role_name(u.role), "peer", q->peer, NULL);
	redirect(res, "/ops/dlq");
}

/* The CSRF token of a proxy's user: the same for as long as the worker
 * runs, known only to pages the proxy let that user load. */
static void
proxy_csrf(const struct dlq_console *con, const char *user,
    char out[DLQ_TOKEN_HASH_LEN + 1])
{
	char text[200];
	int n = snprintf(text, sizeof(text), "%s:%s", con->secret, user);

	dlq_token_hash(text, (size_t)n, out);
	out[DLQ_CSRF_LEN] = '\0';
}

static bool
trusted_proxy(const struct dlq_console *con, const char *peer)
{
	return con->cfg->console_proxy_header != NULL && peer != NULL &&
	    dlq_strlist_contains(&con->cfg->console_proxies, peer);
}

/* Who is asking: the user, how, and (for a session or a proxy) the CSRF
 * token its changes must carry. VIA_NONE when nobody. A wrong bearer
 * token counts as a failed login. */
static enum via
authenticate(struct dlq_console *con, const struct dlq_console_req *q,
    struct dlq_console_user *u, char csrf[DLQ_TOKEN_HASH_LEN + 1],
    bool *limited)
{
	const struct dlq_session *s;
	const char *t;
	int64_t now = dlq_wall_ms(), wait_s;

	*limited = false;
	csrf[0] = '\0';
	if (con->users != NULL)
		dlq_users_refresh(con->users);
	if (q->authorization != NULL) {
		if (strncmp(q->authorization, "Bearer ", 7) != 0)
			return VIA_NONE;
		if (!dlq_login_allowed(con->sessions, q->peer, now, &wait_s)) {
			*limited = true;
			return VIA_NONE;
		}
		for (t = q->authorization + 7; *t == ' '; t++)
			;
		if (con->users != NULL && dlq_users_by_token(con->users, t,
		    strlen(t), u))
			return VIA_TOKEN;
		dlq_login_failed(con->sessions, q->peer, now);
		dlq_log(DLQ_LOG_WARN, "console_login_failed", "peer", q->peer,
		    NULL);
		return VIA_NONE;
	}
	if (q->proxy_user != NULL && trusted_proxy(con, q->peer)) {
		if (con->users == NULL || !dlq_users_by_name(con->users,
		    q->proxy_user, u))
			return VIA_NONE;
		proxy_csrf(con, u->name, csrf);
		return VIA_PROXY;
	}
	if (q->session != NULL && (s = dlq_sessions_find(con->sessions,
	    q->session, now)) != NULL) {
		*u = s->user;
		memcpy(csrf, s->csrf, DLQ_CSRF_LEN + 1);
		return VIA_SESSION;
	}
	return VIA_NONE;
}

static void
security_headers(struct dlq_console_res *res, bool cache)
{
	dlq_console_header(res, "Content-Security-Policy", CSP);
	dlq_console_header(res, "X-Content-Type-Options", "nosniff");
	/* same-origin, not no-referrer: with that a browser posts its forms
	 * with "Origin: null", which same_origin() cannot tell from another
	 * site's */
	dlq_console_header(res, "Referrer-Policy", "same-origin");
	dlq_console_header(res, "Cache-Control", cache ? "no-cache" :
	    "no-store");
}

static bool
is_get(const struct dlq_console_req *q)
{
	return strcmp(q->method, "GET") == 0 || strcmp(q->method, "HEAD") == 0;
}

/* Whether a change comes from a page of this console: a browser's Origin
 * names this host (the Host it asked) or console.public_url's; a client
 * that sends none (a script) is let through to the other checks. Stops
 * another site's form posting here, the login form included. */
static bool
same_origin(const struct dlq_console *con, const struct dlq_console_req *q)
{
	const char *o = q->origin, *pub = con->cfg->console_public_url, *host;
	size_t n;

	if (o == NULL)
		return true;
	if (pub != NULL) {
		n = strlen(pub);
		while (n > 0 && pub[n - 1] == '/')
			n--;
		if (strlen(o) == n && strncmp(o, pub, n) == 0)
			return true;
	}
	if ((host = strstr(o, "://")) == NULL || q->host == NULL)
		return false;
	return strcmp(host + 3, q->host) == 0;
}

/* The public part: the login form, its post, the static files. */
static bool
public_part(struct dlq_console *con, const struct dlq_console_req *q,
    struct dlq_console_res *res)
{
	if (prefixed(q->url, "/static/")) {
		if (!is_get(q)) {
			dlq_console_error(res, 405, "usage",
			    "method not allowed");
			dlq_console_header(res, "Allow", "GET, HEAD");
		} else
			asset(res, q->url + strlen("/static/"));
		return true;
	}
	if (strcmp(q->url, "/login") == 0) {
		if (is_get(q))
			login_page(res, 200);
		else if (strcmp(q->method, "POST") == 0)
			login(con, q, res);
		else {
			dlq_console_error(res, 405, "usage",
			    "method not allowed");
			dlq_console_header(res, "Allow", "GET, POST");
		}
		return true;
	}
	return false;
}

static void
logout(struct dlq_console *con, const struct dlq_console_req *q,
    struct dlq_console_res *res)
{
	if (q->session != NULL)
		dlq_sessions_close(con->sessions, q->session);
	session_cookie(con, res, "", 0);
	redirect(res, "/login");
}

static void
me(struct dlq_console *con, const struct dlq_console_user *u, enum via via,
    const char *csrf, struct dlq_console_res *res)
{
	static const char *const vias[] = { "", "token", "session", "proxy" };

	res->status = 200;
	res->type = "application/json";
	dlq_buf_adds(res->body, "{\"ok\":true,\"data\":{\"user\":");
	dlq_buf_json_cstr(res->body, u->name);
	dlq_buf_adds(res->body, ",\"role\":");
	dlq_buf_json_cstr(res->body, dlq_role_name(u->role));
	dlq_buf_adds(res->body, ",\"via\":");
	dlq_buf_json_cstr(res->body, vias[via]);
	dlq_buf_adds(res->body, ",\"csrf\":");
	dlq_buf_json_cstr(res->body, csrf[0] ? csrf : NULL);
	dlq_buf_adds(res->body, ",\"public_url\":");
	dlq_buf_json_cstr(res->body, con->cfg->console_public_url);
	dlq_buf_adds(res->body, "}}\n");
}

void
dlq_console_handle(struct dlq_console *con, const struct dlq_console_req *q,
    struct dlq_console_res *res)
{
	struct dlq_console_user u;
	char csrf[DLQ_TOKEN_HASH_LEN + 1], retry[24];
	enum via via;
	bool limited, api = prefixed(q->url, "/api/");

	security_headers(res, prefixed(q->url, "/static/"));
	if (!is_get(q) && !same_origin(con, q)) {
		dlq_console_error(res, 403, "csrf",
		    "a change from another site's page");
		return;
	}
	if (public_part(con, q, res))
		return;
	/* nobody gets further without a user: nothing is looked up, locked
	 * or written for a caller who is not one */
	if ((via = authenticate(con, q, &u, csrf, &limited)) == VIA_NONE) {
		if (limited) {
			snprintf(retry, sizeof(retry), "%d",
			    DLQ_LOGIN_WINDOW_MS / 1000);
			dlq_console_header(res, "Retry-After", retry);
			dlq_console_error(res, 429, "rate_limited", "too many "
			    "failed logins from this address; try again later");
		} else if (api || !is_get(q)) {
			dlq_console_header(res, "WWW-Authenticate",
			    "Bearer realm=\"dlq-monitor\"");
			dlq_console_error(res, 401, "unauthenticated",
			    con->users == NULL ? "no console users "
			    "(console.tokens_file is not set)" : "sign in: "
			    "Authorization: Bearer TOKEN, or the login form at "
			    "/login");
		} else
			redirect(res, "/login");
		return;
	}
	/* a change from a browser carries the token only its pages know */
	if (!is_get(q) && via != VIA_TOKEN && (q->csrf == NULL ||
	    strlen(q->csrf) != DLQ_CSRF_LEN || !dlq_token_equal(q->csrf, csrf,
	    DLQ_CSRF_LEN))) {
		dlq_console_error(res, 403, "csrf", "a change from the "
		    "console needs its X-CSRF-Token header (reload the page)");
		return;
	}
	if (strcmp(q->url, "/logout") == 0) {
		if (strcmp(q->method, "POST") != 0) {
			dlq_console_error(res, 405, "usage",
			    "method not allowed");
			dlq_console_header(res, "Allow", "POST");
		} else
			logout(con, q, res);
		return;
	}
	if (strcmp(q->url, "/api/v1/me") == 0 && is_get(q)) {
		me(con, &u, via, csrf, res);
		return;
	}
	if (api) {
		dlq_api_handle(con->api, &u, q, res);
		return;
	}
	if (strcmp(q->url, "/ops/dlq") == 0 || strcmp(q->url, "/ops/dlq/") ==
	    0) {
		if (!is_get(q)) {
			dlq_console_error(res, 405, "usage",
			    "method not allowed");
			dlq_console_header(res, "Allow", "GET, HEAD");
		} else
			asset(res, "console.html");
		return;
	}
	res->status = 404;
	res->type = "text/plain; charset=utf-8";
	dlq_buf_adds(res->body, "not found: the console is at /ops/dlq\n");
}
